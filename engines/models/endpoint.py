"""Failures of a model endpoint (an OpenAI-compatible LLM or embeddings server) as one clear error naming it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class ModelEndpointError(RuntimeError):
    """The model endpoint refused, failed, timed out or answered garbage; the message names it and says which."""


@contextmanager
def endpoint_errors(api_base: str | None) -> Iterator[None]:
    """The openai SDK's errors (and a reply it cannot read) as ModelEndpointError naming `api_base`; the app and
    CLI cannot tell the SDK's own errors from a bug."""
    import openai

    try:
        yield
    except openai.APIStatusError as err:
        raise ModelEndpointError(f"the model endpoint {api_base} answered HTTP {err.status_code}: {str(err.message)[:200]}") from err
    except openai.APITimeoutError as err:
        raise ModelEndpointError(f"the model endpoint {api_base} did not answer in time (RAGROUTER_ENDPOINT_TIMEOUT_S)") from err
    except openai.APIConnectionError as err:
        raise ModelEndpointError(f"cannot reach the model endpoint {api_base}: {err.__cause__ or err}") from err
    except (openai.APIError, ValueError, TypeError, AttributeError, KeyError, IndexError) as err:  # a reply that is not the OpenAI API's
        raise ModelEndpointError(f"the model endpoint {api_base} answered something that is not an OpenAI API reply: {err}") from err


def guarded_stream(api_base: str | None, stream: Iterator[Any]) -> Iterator[Any]:
    """`stream`, its failures while it is read raised as ModelEndpointError."""
    with endpoint_errors(api_base):
        yield from stream
