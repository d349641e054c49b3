"""/openapi.json (a valid OpenAPI 3.0 document of every API) and /docs (Swagger UI, local assets)."""

from __future__ import annotations

import re

import httpx
import pytest
from openapi_spec_validator import validate

DIGITS_INFERENCE = {"/classify", "/classify_torchscript", "/classify_pipeline", "/classify_v1"}
DIGITS_MANAGEMENT = {"/admin/list_models", "/admin/model_config", "/admin/load_model", "/admin/unload_model"}


@pytest.fixture(scope="module")
def digits_document(digits: httpx.Client) -> dict:
    response = digits.get("/openapi.json")
    assert response.status_code == 200
    return response.json()


@pytest.fixture(scope="module")
def echo_document(echo: httpx.Client) -> dict:
    return echo.get("/openapi.json").json()


def test_documents_are_valid_openapi_30(digits_document: dict, echo_document: dict) -> None:
    for document in (digits_document, echo_document):
        assert document["openapi"].startswith("3.0")
        validate(document)


def test_every_api_with_request_response_and_errors(digits_document: dict) -> None:
    paths = digits_document["paths"]
    assert DIGITS_INFERENCE | DIGITS_MANAGEMENT <= set(paths)
    classify = paths["/classify"]["post"]
    assert classify["operationId"] == "classify"
    assert "digits_onnx" in classify["description"]
    assert set(classify["requestBody"]["content"]) == {"image/png", "image/jpeg", "multipart/form-data"}
    # the sample image (samples/digit_3.png) is described, the JSON output has its example
    assert "32x32 PNG image" in classify["requestBody"]["content"]["image/png"]["schema"]["description"]
    ok = classify["responses"]["200"]["content"]["application/json"]
    assert set(ok["example"]) == {"label", "probability", "probabilities"}
    for status in ("400", "413", "500", "503"):
        error = classify["responses"][status]["content"]["application/json"]["schema"]
        assert error == {"$ref": "#/components/schemas/Error"}
    assert digits_document["components"]["schemas"]["Error"]["required"] == ["error", "type"]
    model_config = paths["/admin/model_config"]["post"]["requestBody"]["content"]["text/plain"]
    assert model_config == {"schema": {"type": "string"}, "example": "digits_onnx"}


def test_management_apis_are_tagged_apart(digits_document: dict) -> None:
    tags_by_path = {
        path: item["post"]["tags"] for path, item in digits_document["paths"].items() if "post" in item
    }
    assert all(tags_by_path[p] == ["inference"] for p in DIGITS_INFERENCE)
    assert all(tags_by_path[p] == ["management"] for p in DIGITS_MANAGEMENT)
    order = [t["name"] for t in digits_document["tags"]]
    assert order[:2] == ["inference", "management"]
    assert order.index("infrastructure") > order.index("management")


def test_exposed_triton_endpoints_are_documented(digits_document: dict) -> None:
    paths = digits_document["paths"]
    assert paths["/v2/health/ready"]["get"]["tags"] == ["triton"]
    assert "post" in paths["/v2/models/{model}/versions/{version}/infer"]
    assert not any(p.startswith("/v2/repository") for p in paths)


def test_descriptor_schemas_in_the_document(echo_document: dict) -> None:
    paths = echo_document["paths"]
    logits = paths["/logits"]["post"]["requestBody"]["content"]["application/json"]
    assert logits["example"] == [[0.0] * 64]  # NumpyNdarray.from_sample(np.zeros((1, 64)))
    assert logits["schema"]["items"]["items"] == {"type": "number", "format": "float"}
    point = paths["/point"]["post"]["requestBody"]["content"]["application/json"]
    assert point["schema"] == {"$ref": "#/components/schemas/Point"}
    assert point["example"] == {"x": 1, "y": 2, "label": "a"}
    assert echo_document["components"]["schemas"]["Order"]["required"] == ["item", "quantity"]
    annotate = paths["/annotate"]["post"]["requestBody"]["content"]["multipart/form-data"]
    assert annotate["schema"]["required"] == ["image", "meta", "values"]
    assert annotate["encoding"]["meta"] == {"contentType": "application/json"}
    assert paths["/shout"]["post"]["requestBody"]["content"]["text/plain"]["example"] == "hello"


def test_docs_page_uses_local_assets(digits: httpx.Client) -> None:
    page = digits.get("/docs")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources and all(s.startswith("/docs/assets/") for s in sources), sources
    assert '"url": "/openapi.json"' in page.text
    assert '"validatorUrl": null' in page.text  # no call to validator.swagger.io
    for source in sources:
        asset = digits.get(source)
        assert asset.status_code == 200 and len(asset.content) > 100, source
    assert "SwaggerUIBundle" in digits.get("/docs/assets/swagger-ui-bundle.js").text
    root = digits.get("/", follow_redirects=False)
    assert root.status_code in (302, 307) and root.headers["location"] == "/docs"
