"""JSON Schema fragments shared by primitive option schemas."""

KEY = {"type": "string", "minLength": 1}
PATH = {"type": "string", "minLength": 1}
NAMES = {"type": "array", "items": {"type": "string"}, "minItems": 1}

# A number, or where to find one: {dimension: n_obs} or {node: ../x, dim: 0 | length: true | attr: k, index: 0},
# each optionally shifted by `plus`. `{name}` in `node` is the checked node's own name; `attr` may list several
# names, of which the first the node has is read (`[shape, h5sparse_shape]`: the spec's name, then anndata < 0.7's).
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
                "attr": {"oneOf": [KEY, {"type": "array", "items": KEY, "minItems": 1}]},
                "index": {"type": "integer", "minimum": 0},
                "plus": {"type": "integer"},
            },
        },
    ]
}
