"""The OpenAPI 3.0 document of a service, built from its APIs' descriptors.

OpenAPI 3.0 (not 3.1) because the bundled Swagger UI renders 3.0; descriptors write their
schemas in that dialect (see runnerkit.io._schema).
"""

from __future__ import annotations

from typing import Any

from runnerkit.service._service import Service

_ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error": {"type": "string", "description": "what was wrong, and what was expected"},
        "type": {"type": "string", "description": "the kind of error"},
        "request_id": {"type": "string", "description": "present on 500: find the traceback in the log"},
    },
    "required": ["error", "type"],
}
_ERRORS = {
    "400": "Bad input: the body does not match the API's input, or the model's inputs",
    "413": "Payload too large",
    "500": "Internal error (with a request id; the details are in the service log)",
    "502": "Triton answered with an error",
    "503": "Triton unavailable (starting, restarting or gone)",
}
# Order of the groups on the docs page: inference first, management visibly apart below.
_TAG_DESCRIPTIONS = {
    "inference": "The service's inference APIs",
    "management": "Model management: list models, model configuration, load and unload",
    "infrastructure": "Health probes and metrics",
    "triton": "Triton's KServe v2 endpoints, proxied (expose_triton)",
}


def openapi_document(service: Service) -> dict[str, Any]:
    import runnerkit

    paths: dict[str, Any] = {}
    components: dict[str, Any] = {"Error": _ERROR_SCHEMA}
    used_tags: list[str] = []
    for api in service.apis.values():
        error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        responses: dict[str, Any] = {"200": api.output.openapi_response()}
        responses |= {code: {"description": text, **error} for code, text in _ERRORS.items()}
        paths[api.route] = {
            "post": {
                "operationId": api.name,
                "summary": api.doc.strip().split("\n", 1)[0] if api.doc.strip() else api.name,
                "description": api.doc,
                "tags": list(api.tags),
                "requestBody": api.input.openapi_request_body(),
                "responses": responses,
            }
        }
        components |= api.input.openapi_components() | api.output.openapi_components()
        used_tags += [t for t in api.tags if t not in used_tags]
    text = {"content": {"text/plain": {"schema": {"type": "string"}}}}
    probes: tuple[tuple[str, str, dict[str, Any]], ...] = (
        ("/livez", "Liveness: the API process answers", text),
        ("/readyz", "Readiness: 200 once every runner's Triton is ready, else 503", {}),
        ("/healthz", "Health (as /livez)", text),
        ("/metrics", "Prometheus metrics: requests and latency per API and status", text),
    )
    for probe, summary, content in probes:
        paths[probe] = {
            "get": {
                "tags": ["infrastructure"],
                "summary": summary,
                "operationId": probe.strip("/"),
                "responses": {"200": {"description": "OK", **content}},
            }
        }
    used_tags.append("infrastructure")
    proxy_runner = service.triton_proxy_runner
    if proxy_runner is not None:
        from runnerkit.service._triton_proxy import openapi_paths

        paths |= openapi_paths(proxy_runner.name)
        used_tags.append("triton")
    # inference, then the service's own tags, then management, infrastructure and triton
    ordered = [t for t in _TAG_DESCRIPTIONS if t in used_tags]
    ordered += [t for t in used_tags if t not in _TAG_DESCRIPTIONS]
    ordered.sort(key=lambda t: (t != "inference", t in ("management", "infrastructure", "triton")))
    return {
        "openapi": "3.0.3",
        "info": {
            "title": service.name,
            "version": runnerkit.__version__,
            "description": f"runnerkit service {service.name!r}: runners {[r.name for r in service.runners]}",
        },
        "tags": [{"name": t, "description": _TAG_DESCRIPTIONS.get(t, "")} for t in ordered],
        "paths": paths,
        "components": {"schemas": components},
    }
