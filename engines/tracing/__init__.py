"""One trace per question, from LlamaIndex's instrumentation: `recorder` keeps the spans, model calls and notes of
the question being answered (timings_ms, the waterfall and the trace's counts come from it alone); `export`
sends the same spans on as OpenTelemetry/OpenInference."""
