"""JSON Schema fragments shared by primitive option schemas."""

KEY = {"type": "string", "minLength": 1}
PATH = {"type": "string", "minLength": 1}
NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1}

# A number, or where to find one: {dimension: n_obs} or {node: ../x, dim: 0 | length: true | attr: k, index: 0},
# each optionally shifted by `plus`.
REF = {
    "oneOf": [
        {"type": "number"},
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "dimension": {"type": "string"},
                "node": PATH,
                "dim": {"type": "integer", "minimum": 0},
                "length": {"const": True},
                "attr": KEY,
                "index": {"type": "integer", "minimum": 0},
                "plus": {"type": "integer"},
            },
        },
    ]
}
