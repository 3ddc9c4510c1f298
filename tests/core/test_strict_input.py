"""Strict parsing: integers are JSON integers, booleans JSON booleans, unknown fields refused, all problems at once."""

import pytest

VALID = {"amount": 1000, "isPhysicalProduct": True, "customer": {"name": "Ana"},
         "items": [{"title": "Mug", "quantity": 2}]}


@pytest.fixture(autouse=True)
def test_urls(settings):
    settings.ROOT_URLCONF = "tests.core.urls"


def post(api, body):
    return api.post("/_test/orders", data=body, format="json", HTTP_X_REQUEST_ID="req-v")


@pytest.mark.django_db
def test_valid_body_passes(api):
    response = post(api, VALID)

    assert response.status_code == 201
    assert response.json() == {"amount": 1000, "items": 1}


@pytest.mark.django_db
@pytest.mark.parametrize("amount", [100.0, 100.5, "100", True, None, [100], {"v": 100}])
def test_amount_must_be_a_json_integer(api, amount):
    response = post(api, {**VALID, "amount": amount})

    assert response.status_code == 400
    body = response.json()["error"]
    assert body["code"] == "validation_error"
    assert body["param"] == "amount"
    assert [d["param"] for d in body["details"]] == ["amount"]
    assert body["details"][0]["code"] in ("invalid", "null")


@pytest.mark.django_db
@pytest.mark.parametrize("flag", ["true", 1, 0, None, "false"])
def test_boolean_must_be_a_json_boolean(api, flag):
    response = post(api, {**VALID, "isPhysicalProduct": flag})

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["param"] == "isPhysicalProduct"


@pytest.mark.django_db
def test_string_field_refuses_numbers(api):
    response = post(api, {**VALID, "customer": {"name": 12345}})

    assert response.json()["error"]["details"] == [
        {"param": "customer.name", "code": "invalid", "message": "Must be a JSON string."}
    ]


@pytest.mark.django_db
def test_unknown_fields_alone_are_unknown_field(api):
    response = post(api, {**VALID, "amout": 5, "customer": {"name": "Ana", "nmae": "x"}})

    assert response.status_code == 400
    assert response.json() == {"error": {
        "type": "invalid_request_error", "code": "unknown_field", "message": "The request has unknown fields",
        "param": None, "requestId": "req-v",
        "details": [
            {"param": "customer.nmae", "code": "unknown_field", "message": "Unknown field 'nmae'."},
            {"param": "amout", "code": "unknown_field", "message": "Unknown field 'amout'."},
        ],
    }}


@pytest.mark.django_db
def test_every_problem_is_reported_at_once_with_dotted_paths(api):
    body = {"amount": 99.5, "isPhysicalProduct": "true", "customer": {"name": "A"},
            "items": [{"title": "ok", "quantity": 1}, {"title": "way too long title", "quantity": 0}], "extra": 1}

    response = post(api, body)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert error["param"] is None
    assert sorted((d["param"], d["code"]) for d in error["details"]) == [
        ("amount", "invalid"),
        ("customer.name", "min_length"),
        ("extra", "unknown_field"),
        ("isPhysicalProduct", "invalid"),
        ("items.1.quantity", "min_value"),
        ("items.1.title", "max_length"),
    ]


@pytest.mark.django_db
def test_missing_fields_are_required(api):
    response = post(api, {})

    assert sorted((d["param"], d["code"]) for d in response.json()["error"]["details"]) == [
        ("amount", "required"), ("customer", "required"), ("isPhysicalProduct", "required"), ("items", "required"),
    ]


@pytest.mark.django_db
def test_top_level_array_is_a_validation_error(api):
    response = post(api, [1, 2])

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
