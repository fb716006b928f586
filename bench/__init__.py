"""Benchmarks on ../shared/eval (dev splits for choosing defaults)."""
