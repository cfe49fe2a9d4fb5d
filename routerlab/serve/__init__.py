"""The streaming API (FastAPI + SSE) and the live progress page of ``routerlab serve``."""

from routerlab.app.ask_request import ROUTING_MODES, AskRequest, describe_body_error, describe_validation_errors
from routerlab.serve.app import API_PREFIX, ServeSettings, create_app, serve
from routerlab.serve.background import serve_in_background
from routerlab.serve.body_limit import MAX_BODY_BYTES, BodyLimit, BodyTooLarge
from routerlab.serve.contract import QUESTION_TYPES, present, routing_mode_used
from routerlab.serve.envelope import ErrorCode, ProgressSummary, dump_json, envelope, error_envelope, event_envelope
from routerlab.serve.header_timeout import HEADER_TIMEOUT_S, header_timeout_protocol
from routerlab.serve.runs import ConversationBusyError, Run, RunRegistry, stream_run

__all__ = [
    "API_PREFIX",
    "HEADER_TIMEOUT_S",
    "MAX_BODY_BYTES",
    "QUESTION_TYPES",
    "ROUTING_MODES",
    "AskRequest",
    "BodyLimit",
    "BodyTooLarge",
    "ConversationBusyError",
    "ErrorCode",
    "ProgressSummary",
    "Run",
    "RunRegistry",
    "ServeSettings",
    "create_app",
    "describe_body_error",
    "describe_validation_errors",
    "dump_json",
    "envelope",
    "error_envelope",
    "event_envelope",
    "header_timeout_protocol",
    "present",
    "routing_mode_used",
    "serve",
    "serve_in_background",
    "stream_run",
]
