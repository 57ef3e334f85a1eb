"""Zarr v3 metadata primitives, on in-memory stores of raw zarr.json documents."""

from __future__ import annotations

import contextlib
import copy
from typing import Any, NamedTuple

import pytest
from dict_store import DictStore
from memory_tree import findings

from spec_validate.model import NotApplicable, NotChecked
from spec_validate.nodes.zarr.tree import ZarrTree

GROUP = {"zarr_format": 3, "node_type": "group", "attributes": {}}
ARRAY = {
    "zarr_format": 3,
    "node_type": "array",
    "shape": [4, 6],
    "data_type": "float64",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": "NaN",
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "attributes": {},
}
SHARDING = {
    "name": "sharding_indexed",
    "configuration": {
        "chunk_shape": [1, 3],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end",
    },
}

SHARDED_STRINGS = {
    "name": "sharding_indexed",
    "configuration": {
        **SHARDING["configuration"],
        "codecs": [
            {"name": "vlen-utf8", "configuration": {}},
            {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
        ],
    },
}
# The declared configuration members, as zarr3.codecs.configuration-declared passes them.
CODEC_MEMBERS = {"bytes": ["endian"], "transpose": ["order"], "gzip": ["level"], "crc32c": [], "zstd": ["level", "checksum"]}


def array(extra_keys: dict[str, Any] | None = None, **changes: Any):
    """The node /a of a store holding ARRAY with `changes` (a value of ... removes the field)."""
    meta = copy.deepcopy(ARRAY)
    for key, value in changes.items():
        if value is ...:
            meta.pop(key)
        else:
            meta[key] = value
    items = {"zarr.json": GROUP, "a/zarr.json": meta, **(extra_keys or {})}
    return ZarrTree(DictStore(items), 3).get("/a")


def group(items: dict[str, Any], path: str = "/"):
    return ZarrTree(DictStore(items), 3).get(path)


def run(primitive: str, node: Any, options: dict | None = None) -> list:
    return findings(primitive, node, options, sc="unused")


class Case(NamedTuple):
    id: str
    primitive: str
    node: Any
    options: dict | None
    expect: int | type  # the number of findings, or NotApplicable / NotChecked


def case(id: str, primitive: str, node: Any, expect: int | type, options: dict | None = None) -> Any:
    return pytest.param(Case(id, primitive, node, options, expect), id=id)


CASES = [
    # extension definitions
    case(
        "extension_definition_passes_short_hand_data_type",
        "extension_definition",
        array(),
        0,
        {"key": "data_type", "list": False},
    ),
    case("extension_definition_fails_number", "extension_definition", array(data_type=5), 1, {"key": "data_type", "list": False}),
    case(
        "extension_definition_fails_codecs_not_a_list",
        "extension_definition",
        array(codecs={"name": "bytes"}),
        1,
        {"key": "codecs", "list": True},
    ),
    case(
        "extension_definition_fails_codec_item_number",
        "extension_definition",
        array(codecs=[{"name": "bytes"}, 3]),
        1,
        {"key": "codecs", "list": True},
    ),
    case(
        "extension_definition_not_applicable_when_absent",
        "extension_definition",
        array(),
        NotApplicable,
        {"key": "storage_transformers", "list": True},
    ),
    case(
        "extension_names_are_strings_fails_object_without_name",
        "extension_names_are_strings",
        array(chunk_key_encoding={"configuration": {}}),
        1,
    ),
    case(
        "extension_names_are_strings_fails_nested_codec",
        "extension_names_are_strings",
        array(codecs=[{**SHARDING, "configuration": {**SHARDING["configuration"], "codecs": [{"name": 1}]}}]),
        1,
    ),
    case(
        "extension_names_conform_passes_uri",
        "extension_names_conform",
        array(codecs=[{"name": "https://example.org/codecs/mine"}]),
        0,
    ),
    case("extension_names_conform_fails_uppercase", "extension_names_conform", array(data_type="Float64"), 1),
    case("extension_names_conform_fails_single_letter", "extension_names_conform", array(data_type="f"), 1),
    case(
        "extension_configurations_are_objects_fails_list",
        "extension_configurations_are_objects",
        array(chunk_grid={"name": "regular", "configuration": [2, 3]}),
        1,
    ),
    case(
        "extension_must_understand_boolean_passes_true",
        "extension_must_understand_boolean",
        array(codecs=[{"name": "bytes", "configuration": {"endian": "little"}, "must_understand": True}]),
        0,
    ),
    case(
        "extension_must_understand_boolean_fails_zero",
        "extension_must_understand_boolean",
        array(codecs=[{"name": "bytes", "configuration": {"endian": "little"}, "must_understand": 0}]),
        1,
    ),
    case(
        "extension_must_understand_boolean_not_applicable_without_it", "extension_must_understand_boolean", array(), NotApplicable
    ),
    case(
        "extension_must_understand_allowed_passes_codec_false",
        "extension_must_understand_allowed",
        array(
            data_type={"name": "numpy.datetime64", "configuration": {"unit": "s"}},
            codecs=[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "x.y", "must_understand": False}],
        ),
        0,
    ),
    case(
        "extension_must_understand_allowed_fails_data_type_false",
        "extension_must_understand_allowed",
        array(data_type={"name": "numpy.datetime64", "must_understand": False}),
        1,
    ),
    case(
        "metadata_fields_understood_passes_ignorable_field",
        "metadata_fields_understood",
        array(notes={"must_understand": False}),
        0,
    ),
    case("metadata_fields_understood_fails_plain_field", "metadata_fields_understood", array(notes="x"), 1),
    case(
        "metadata_fields_understood_fails_consolidated_on_an_array",
        "metadata_fields_understood",
        array(consolidated_metadata={"kind": "inline", "metadata": {}}),
        1,
    ),
    case(
        "metadata_fields_understood_passes_group_consolidated",
        "metadata_fields_understood",
        group({"zarr.json": {**GROUP, "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {}}}}),
        0,
    ),
    # data types and fill values
    case("data_type_core_as_string_fails_object", "data_type_core_as_string", array(data_type={"name": "float64"}), 1),
    case(
        "data_type_core_as_string_fails_raw_bits_object",
        "data_type_core_as_string",
        array(data_type={"name": "r16"}, fill_value=[0, 0]),
        1,
    ),
    case(
        "data_type_core_as_string_not_applicable_extension", "data_type_core_as_string", array(data_type="string"), NotApplicable
    ),
    case("raw_bits_multiple_of_8_passes_r24", "raw_bits_multiple_of_8", array(data_type="r24"), 0),
    case("raw_bits_multiple_of_8_fails_r0", "raw_bits_multiple_of_8", array(data_type="r0"), 1),
    case(
        "fill_value_permitted_passes_bool",
        "fill_value_permitted",
        array(data_type="bool", fill_value=True),
        0,
        {"family": "boolean"},
    ),
    case(
        "fill_value_permitted_fails_bool_null",
        "fill_value_permitted",
        array(data_type="bool", fill_value=None),
        1,
        {"family": "boolean"},
    ),
    case(
        "fill_value_permitted_passes_uint64_max",
        "fill_value_permitted",
        array(data_type="uint64", fill_value=2**64 - 1),
        0,
        {"family": "integer"},
    ),
    case(
        "fill_value_permitted_fails_int8_128",
        "fill_value_permitted",
        array(data_type="int8", fill_value=128),
        1,
        {"family": "integer"},
    ),
    case(
        "fill_value_permitted_fails_integer_true",
        "fill_value_permitted",
        array(data_type="int32", fill_value=True),
        1,
        {"family": "integer"},
    ),
    case(
        "fill_value_permitted_passes_float_hex",
        "fill_value_permitted",
        array(data_type="float32", fill_value="0x7FC00000"),
        0,
        {"family": "float"},
    ),
    case(
        "fill_value_permitted_passes_float_minus_infinity",
        "fill_value_permitted",
        array(fill_value="-Infinity"),
        0,
        {"family": "float"},
    ),
    case("fill_value_permitted_passes_float_integer_number", "fill_value_permitted", array(fill_value=3), 0, {"family": "float"}),
    case(
        "fill_value_permitted_fails_float_hex_too_wide",
        "fill_value_permitted",
        array(data_type="float16", fill_value="0x7e000"),
        1,
        {"family": "float"},
    ),
    case(
        "fill_value_permitted_fails_float_infinity_lowercase",
        "fill_value_permitted",
        array(fill_value="inf"),
        1,
        {"family": "float"},
    ),
    case(
        "fill_value_permitted_passes_complex_specials",
        "fill_value_permitted",
        array(data_type="complex128", fill_value=["-Infinity", "NaN"]),
        0,
        {"family": "complex"},
    ),
    case(
        "fill_value_permitted_fails_complex_bad_part",
        "fill_value_permitted",
        array(data_type="complex64", fill_value=[0, "0x7ff8000000000000"]),
        1,
        {"family": "complex"},
    ),
    case(
        "fill_value_permitted_passes_raw_bytes",
        "fill_value_permitted",
        array(data_type="r24", fill_value=[1, 2, 255]),
        0,
        {"family": "raw"},
    ),
    case(
        "fill_value_permitted_fails_raw_byte_256",
        "fill_value_permitted",
        array(data_type="r8", fill_value=[256]),
        1,
        {"family": "raw"},
    ),
    case(
        "fill_value_permitted_not_applicable_other_family", "fill_value_permitted", array(), NotApplicable, {"family": "integer"}
    ),
    case(
        "fill_value_permitted_not_applicable_extension_type",
        "fill_value_permitted",
        array(data_type="string", fill_value=""),
        NotApplicable,
        {"family": "float"},
    ),
    # chunk grid and keys
    case("regular_grid_object_fails_short_hand", "regular_grid_object", array(chunk_grid="regular"), 1),
    case(
        "regular_grid_object_not_applicable_other_grid",
        "regular_grid_object",
        array(chunk_grid={"name": "rectilinear"}),
        NotApplicable,
    ),
    case(
        "regular_grid_configuration_fails_without_chunk_shape",
        "regular_grid_configuration",
        array(chunk_grid={"name": "regular", "configuration": {"shape": [2, 3]}}),
        1,
    ),
    case(
        "regular_grid_chunk_shape_fails_string_item",
        "regular_grid_chunk_shape",
        array(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2, "3"]}}),
        1,
    ),
    case(
        "regular_grid_chunks_positive_fails_negative",
        "regular_grid_chunks_positive",
        array(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [2, -3]}}),
        1,
    ),
    case(
        "chunk_key_separator_passes_no_configuration",
        "chunk_key_separator",
        array(chunk_key_encoding={"name": "default"}),
        0,
        {"encoding": "default"},
    ),
    case(
        "chunk_key_separator_fails_extra_member",
        "chunk_key_separator",
        array(chunk_key_encoding={"name": "v2", "configuration": {"separator": ".", "padding": 2}}),
        1,
        {"encoding": "v2"},
    ),
    case(
        "chunk_keys_encoded_passes_chunks_and_extension_keys",
        "chunk_keys_encoded",
        array(extra_keys={"a/c/0/0": b"x", "a/c/1/1": b"x", "a/__index/x": b"x"}),
        0,
    ),
    case(
        "chunk_keys_encoded_fails_leading_zero_and_v2_key_not_a_key_of_one_index",
        "chunk_keys_encoded",
        array(extra_keys={"a/c/01/0": b"x", "a/0.0": b"x", "a/c/0": b"x"}),
        2,
    ),
    case("chunk_keys_encoded_fails_dot_separator", "chunk_keys_encoded", array(extra_keys={"a/c.0.1": b"x"}), 1),
    case(
        "chunk_keys_encoded_fails_nested_keys_under_v2_dot",
        "chunk_keys_encoded",
        array(
            chunk_key_encoding={"name": "v2", "configuration": {"separator": "."}}, extra_keys={"a/0/0": b"x", "a/c/1/1": b"x"}
        ),
        2,
    ),
    case(
        "chunk_keys_encoded_fails_v2_scalar_key_under_default",
        "chunk_keys_encoded",
        array(shape=[], chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}}, extra_keys={"a/0": b"x"}),
        1,
    ),
    case(
        "chunk_keys_encoded_passes_v2_documents_and_n5_attributes",
        "chunk_keys_encoded",
        array(extra_keys={"a/.zarray": {}, "a/.zattrs": {}, "a/attributes.json": {}, "a/.DS_Store": b"x"}),
        0,
    ),
    case(
        "array_keys_known_fails_v2_documents_n5_attributes_and_one_index",
        "array_keys_known",
        array(extra_keys={"a/.zarray": {}, "a/.zattrs": {}, "a/attributes.json": {}, "a/c/0": b"x", "a/c/0/0": b"x"}),
        4,
    ),
    case(
        "array_keys_known_passes_chunks_misplaced_chunks_and_extension_keys",
        "array_keys_known",
        array(extra_keys={"a/c/0/0": b"x", "a/0.0": b"x", "a/c/9/9": b"x", "a/__index/x": b"x"}),
        0,
    ),
    case(
        "chunk_keys_encoded_passes_scalar_c",
        "chunk_keys_encoded",
        array(shape=[], chunk_grid={"name": "regular", "configuration": {"chunk_shape": []}}, extra_keys={"a/c": b"x"}),
        0,
    ),
    case(
        "chunk_keys_encoded_passes_v2_dot_keys",
        "chunk_keys_encoded",
        array(chunk_key_encoding={"name": "v2"}, extra_keys={"a/1.1": b"x"}),
        0,
    ),
    case(
        "chunk_keys_encoded_not_checked_with_storage_transformers",
        "chunk_keys_encoded",
        array(storage_transformers=[{"name": "x"}]),
        NotChecked,
    ),
    case(
        "chunk_keys_in_grid_fails_index_past_grid", "chunk_keys_in_grid", array(extra_keys={"a/c/2/0": b"x", "a/c/1/1": b"x"}), 1
    ),
    # codecs
    case(
        "codecs_contain_array_to_bytes_fails_only_compressors",
        "codecs_contain_array_to_bytes",
        array(codecs=[{"name": "gzip", "configuration": {"level": 1}}]),
        1,
    ),
    case(
        "codecs_contain_array_to_bytes_not_checked_unknown_codec",
        "codecs_contain_array_to_bytes",
        array(codecs=[{"name": "mystery"}]),
        NotChecked,
    ),
    case(
        "codec_chains_ordered_passes_transpose_bytes_blosc",
        "codec_chains_ordered",
        array(
            codecs=[
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "blosc"},
            ]
        ),
        0,
    ),
    case(
        "codec_chains_ordered_fails_two_array_to_bytes",
        "codec_chains_ordered",
        array(codecs=[{"name": "bytes"}, {"name": "bytes"}]),
        1,
    ),
    case(
        "codec_chains_ordered_fails_transpose_after_bytes",
        "codec_chains_ordered",
        array(codecs=[{"name": "bytes"}, {"name": "transpose", "configuration": {"order": [1, 0]}}]),
        1,
    ),
    case(
        "codec_chains_ordered_fails_inner_chain",
        "codec_chains_ordered",
        array(
            codecs=[{**SHARDING, "configuration": {**SHARDING["configuration"], "codecs": [{"name": "gzip"}, {"name": "bytes"}]}}]
        ),
        1,
    ),
    case(
        "codec_member_fails_required_member_of_short_hand",
        "codec_member",
        array(codecs=[{"name": "bytes"}, "blosc"]),
        1,
        {"codec": "blosc", "member": "shuffle", "required": True},
    ),
    case(
        "codec_member_not_applicable_unless_noshuffle",
        "codec_member",
        array(codecs=[{"name": "bytes"}, {"name": "blosc", "configuration": {"shuffle": "noshuffle"}}]),
        NotApplicable,
        {"codec": "blosc", "member": "typesize", "required": True, "unless": {"member": "shuffle", "equals": "noshuffle"}},
    ),
    case(
        "codec_member_fails_level_string",
        "codec_member",
        array(codecs=[{"name": "bytes"}, {"name": "gzip", "configuration": {"level": "9"}}]),
        1,
        {"codec": "gzip", "member": "level", "type": "integer", "minimum": 0, "maximum": 9},
    ),
    case(
        "codec_member_not_applicable_without_codec", "codec_member", array(), NotApplicable, {"codec": "gzip", "member": "level"}
    ),
    case(
        "bytes_endian_present_fails_shard_index_without_endian",
        "bytes_endian_present",
        array(
            data_type="uint8",
            fill_value=0,
            codecs=[
                {
                    **SHARDING,
                    "configuration": {
                        **SHARDING["configuration"],
                        "codecs": [{"name": "bytes"}],
                        "index_codecs": [{"name": "bytes"}, {"name": "crc32c"}],
                    },
                }
            ],
        ),
        1,
    ),
    case(
        "bytes_endian_present_not_applicable_single_byte",
        "bytes_endian_present",
        array(data_type="int8", fill_value=0, codecs=[{"name": "bytes"}]),
        NotApplicable,
    ),
    case(
        "transpose_order_permutation_fails_length",
        "transpose_order_permutation",
        array(codecs=[{"name": "transpose", "configuration": {"order": [2, 1, 0]}}, {"name": "bytes"}]),
        1,
    ),
    case(
        "transpose_order_permutation_passes_in_index_codecs",
        "transpose_order_permutation",
        array(
            codecs=[
                {
                    **SHARDING,
                    "configuration": {
                        **SHARDING["configuration"],
                        "index_codecs": [
                            {"name": "transpose", "configuration": {"order": [2, 0, 1]}},
                            {"name": "bytes", "configuration": {"endian": "little"}},
                        ],
                    },
                }
            ]
        ),
        0,
    ),
    # sharding
    case("sharding_chunk_shape_passes", "sharding_chunk_shape", array(codecs=[SHARDING]), 0),
    case(
        "sharding_chunk_shape_fails_not_dividing_after_transpose",
        "sharding_chunk_shape",
        array(codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}}, SHARDING]),
        1,
    ),
    case(
        "sharding_codec_list_fails_item_number",
        "sharding_codec_list",
        array(codecs=[{**SHARDING, "configuration": {**SHARDING["configuration"], "codecs": [5]}}]),
        1,
        {"member": "codecs"},
    ),
    case(
        "sharding_index_codecs_fixed_size_fails_zstd",
        "sharding_index_codecs_fixed_size",
        array(
            codecs=[
                {
                    **SHARDING,
                    "configuration": {**SHARDING["configuration"], "index_codecs": [{"name": "bytes"}, {"name": "zstd"}]},
                }
            ]
        ),
        1,
    ),
    case(
        "sharding_index_codecs_recommended_fails_without_crc32c",
        "sharding_index_codecs_recommended",
        array(
            codecs=[
                {
                    **SHARDING,
                    "configuration": {
                        **SHARDING["configuration"],
                        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                    },
                }
            ]
        ),
        1,
    ),
    case("sharding_configuration_members_passes", "sharding_configuration_members", array(codecs=[SHARDING]), 0),
    # optional members, consolidated metadata, hierarchy
    case("dimension_names_valid_passes_nulls", "dimension_names_valid", array(dimension_names=[None, "y"]), 0),
    case("dimension_names_valid_fails_number", "dimension_names_valid", array(dimension_names=["x", 2]), 1),
    case("dimension_names_distinct_passes_repeated_empty", "dimension_names_distinct", array(dimension_names=["", ""]), 0),
    case("attributes_object_fails_string", "attributes_object", array(attributes="x"), 1),
    case("attributes_object_not_applicable_when_absent", "attributes_object", array(attributes=...), NotApplicable),
    case(
        "consolidated_marker_fails_must_understand_true",
        "consolidated_marker",
        group({"zarr.json": {**GROUP, "consolidated_metadata": {"kind": "inline", "must_understand": True, "metadata": {}}}}),
        1,
    ),
    case(
        "consolidated_marker_fails_metadata_missing",
        "consolidated_marker",
        group({"zarr.json": {**GROUP, "consolidated_metadata": {"kind": "inline", "must_understand": False}}}),
        1,
    ),
    case(
        "consolidated_entries_match_passes_nested_marker",
        "consolidated_entries_match",
        group(
            {
                "zarr.json": {
                    **GROUP,
                    "consolidated_metadata": {
                        "kind": "inline",
                        "must_understand": False,
                        "metadata": {
                            "s": {**GROUP, "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {}}}
                        },
                    },
                },
                "s/zarr.json": GROUP,
            }
        ),
        0,
    ),
    case(
        "consolidated_entries_match_fails_missing_and_extra",
        "consolidated_entries_match",
        group(
            {
                "zarr.json": {
                    **GROUP,
                    "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": {"gone": GROUP}},
                },
                "s/zarr.json": GROUP,
            }
        ),
        2,
    ),
    case(
        "node_name_nfkc_fails_ligature",
        "node_name_nfkc",
        group({"zarr.json": GROUP, "\ufb01le/zarr.json": GROUP}, "/\ufb01le"),
        1,
    ),
    case(
        "node_name_nfkc_fails_sharp_s_not_case_folded",
        "node_name_nfkc",
        group({"zarr.json": GROUP, "stra\u00dfe/zarr.json": GROUP}, "/stra\u00dfe"),
        1,
    ),
    case("group_metadata_stored_fails_implicit_root", "group_metadata_stored", group({"a/zarr.json": ARRAY}), 1),
    case("v2_documents_absent_fails_zattrs", "v2_documents_absent", group({"zarr.json": GROUP, ".zattrs": {}}), 1),
    # keys beside a group's nodes
    case(
        "array_documents_stored_fails_folder_of_chunks_without_zarr_json",
        "array_documents_stored",
        group({"zarr.json": GROUP, "x/c/0/0": b"x", "x/c/1/0": b"x", "sub/zarr.json": GROUP, "sub/y/0.0": b"x"}),
        1,
    ),
    case(
        "array_documents_stored_passes_zarr_v2_array_and_stray_folder",
        "array_documents_stored",
        group({"zarr.json": GROUP, "v2/.zarray": {}, "v2/0.0": b"x", "notes/readme.txt": b"x", "a/zarr.json": ARRAY}),
        0,
    ),
    case(
        "array_documents_stored_fails_in_implicit_group",
        "array_documents_stored",
        group({"zarr.json": GROUP, "sub/a/zarr.json": ARRAY, "sub/lost/0": b"x", "sub/lost/1": b"x"}, "/sub"),
        1,
    ),
    case(
        "group_keys_known_fails_stray_files_and_folders",
        "group_keys_known",
        group({"zarr.json": GROUP, ".DS_Store": b"x", "attributes.json": {}, "v2/.zarray": {}, "v2/0.0": b"x"}),
        4,
    ),
    case(
        "group_keys_known_passes_nodes_v2_documents_lost_chunks_and_extension_keys",
        "group_keys_known",
        group({"zarr.json": GROUP, ".zattrs": {}, "a/zarr.json": ARRAY, "a/c/0/0": b"x", "x/c/0": b"x", "__ext/data": b"x"}),
        0,
    ),
    case(
        "group_keys_known_not_applicable_when_its_zarr_json_is_no_json",
        "group_keys_known",
        group({"zarr.json": GROUP, "x/zarr.json": b"not JSON", "x/c/0": b"x"}, "/x"),
        NotApplicable,
    ),
    # codec configurations
    case(
        "codec_configuration_declared_fails_unknown_bytes_member",
        "codec_configuration_declared",
        array(codecs=[{"name": "bytes", "configuration": {"endian": "little", "foo": 1}}]),
        1,
        {"members": CODEC_MEMBERS},
    ),
    case(
        "codec_configuration_declared_fails_inside_sharding",
        "codec_configuration_declared",
        array(
            codecs=[
                {
                    **SHARDING,
                    "configuration": {
                        **SHARDING["configuration"],
                        "codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "zstd", "configuration": {"level": 1, "strategy": 2}},
                        ],
                        "index_codecs": [
                            {"name": "bytes", "configuration": {"endian": "little"}},
                            {"name": "crc32c", "configuration": {"x": 1}},
                        ],
                    },
                }
            ]
        ),
        2,
        {"members": CODEC_MEMBERS},
    ),
    case(
        "codec_configuration_declared_passes_declared_members_and_short_hand",
        "codec_configuration_declared",
        array(
            codecs=[
                {"name": "transpose", "configuration": {"order": [1, 0]}},
                "bytes",
                {"name": "gzip", "configuration": {"level": 1}},
            ]
        ),
        0,
        {"members": CODEC_MEMBERS},
    ),
    case(
        "codec_configuration_declared_not_applicable_extension_codec",
        "codec_configuration_declared",
        array(codecs=[{"name": "mystery", "configuration": {"anything": 1}}]),
        NotApplicable,
        {"members": CODEC_MEMBERS},
    ),
    # codec ids inside sharding
    case(
        "has_codec_passes_vlen_utf8_inside_sharding",
        "has_codec",
        array(data_type="string", codecs=[SHARDED_STRINGS]),
        0,
        {"id": "vlen-utf8"},
    ),
    case("has_codec_fails_sharded_bytes", "has_codec", array(codecs=[SHARDING]), 1, {"id": "vlen-utf8"}),
]


@pytest.mark.parametrize("c", CASES)
def test_zarr_v3_primitive(c: Case):
    if isinstance(c.expect, type):
        with pytest.raises(c.expect):
            run(c.primitive, c.node, c.options)
    else:
        got = run(c.primitive, c.node, c.options)
        assert len(got) == c.expect, [f.message for f in got]


def test_group_metadata_stored_says_whether_the_store_holds_any_group():
    # tensorstore writes arrays only: no group zarr.json anywhere (its writer note is about such stores only)
    (f,) = run("group_metadata_stored", group({"a/zarr.json": ARRAY}))
    assert f.details == {"key": "zarr.json", "below": "a/zarr.json", "groups_stored": False}
    (f,) = run("group_metadata_stored", group({"zarr.json": GROUP, "s/a/zarr.json": ARRAY}, "/s"))
    assert f.details["groups_stored"] is True  # the root's zarr.json


def test_fill_value_permitted_fails_bare_nan_naming_the_string_to_write():
    got = run("fill_value_permitted", array(fill_value=float("nan")), {"family": "float"})
    assert len(got) == 1 and '"NaN"' in got[0].message


def test_chunk_keys_encoded_fails_at_most_20_then_a_count():
    node = array(extra_keys={f"a/c.0.{i}": b"x" for i in range(25)})
    got = run("chunk_keys_encoded", node)
    assert len(got) == 21 and got[-1].details["more"] == 5


def test_array_keys_known_fails_at_most_20_then_a_count():
    node = array(extra_keys={f"a/junk{i}": b"x" for i in range(25)})
    got = run("array_keys_known", node)
    assert len(got) == 21 and got[-1].details["more"] == 5


def test_chunk_keys_encoded_names_the_form_of_the_key():
    (f,) = run("chunk_keys_encoded", array(extra_keys={"a/0.1": b"x"}))
    assert f.details == {"key": "0.1", "form": 'the v2 encoding with "."'} and "'c/0/0'" in f.message


def test_array_documents_stored_names_the_folder_its_form_and_dimensions():
    (f,) = run("array_documents_stored", group({"zarr.json": GROUP, "sub/zarr.json": GROUP, "sub/x/c/0/0": b"x"}, "/sub"))
    assert f.details == {"key": "sub/x", "form": 'the default encoding with "/"', "ndim": 2, "keys": 1}


RECTILINEAR = {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[2, 2], [3, 3]]}}


class Deep(NamedTuple):
    """What the chunk decoding primitive asks of its scope."""

    deep: bool


@pytest.mark.parametrize(
    "primitive,node,sc,why",
    [
        pytest.param("chunk_keys_in_grid", array(chunk_grid=RECTILINEAR), "unused", "chunk keys", id="chunk-keys-in-grid"),
        pytest.param(
            "sharding_chunk_shape", array(chunk_grid=RECTILINEAR, codecs=[SHARDING]), "unused", "sharding", id="shard-shape"
        ),
        pytest.param("shard_indexes_valid", array(chunk_grid=RECTILINEAR, codecs=[SHARDING]), "unused", "shard", id="indexes"),
        pytest.param("chunks_decode", array(chunk_grid=RECTILINEAR), Deep(True), "chunks", id="decode-deep"),
        pytest.param("chunks_decode", array(chunk_grid=RECTILINEAR), Deep(False), "chunks", id="decode-shallow"),
    ],
)
def test_clauses_needing_the_chunk_grid_are_not_checked_on_a_grid_not_read(primitive, node, sc, why):
    # `rectilinear` (zarr-python writes it when asked to) is an extension this pack does not read: what needs the
    # grid is not checked, naming the grid, never not applicable (which would read as "conforms").
    options = {"check": "decodes"} if primitive == "shard_indexes_valid" else None
    with pytest.raises(NotChecked) as caught:
        findings(primitive, node, options, sc=sc)
    assert "chunk grid 'rectilinear' is an extension this tool does not read" in str(caught.value)
    assert why in str(caught.value)


def test_an_unusable_regular_grid_stays_not_applicable():
    # A broken regular grid is the grid rules' failure: the clauses that need the grid are not applicable there.
    node = array(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [0, 3]}})
    with pytest.raises(NotApplicable) as caught:
        run("chunk_keys_in_grid", node)
    assert type(caught.value) is NotApplicable


def test_chunks_decode_is_not_checked_without_deep():
    with pytest.raises(NotChecked) as caught:
        findings("chunks_decode", array(), sc=Deep(False))
    assert str(caught.value) == "needs --deep"


def test_a_long_codec_list_is_worked_out_once_for_every_primitive_that_asks(monkeypatch):
    from spec_validate.checks import zarr_v3

    walked = []
    chains = zarr_v3.codec_chains
    monkeypatch.setattr(zarr_v3, "codec_chains", lambda meta: walked.append(1) or chains(meta))
    transposes = [{"name": "transpose", "configuration": {"order": [1, 0]}}] * zarr_v3.LONG_CODEC_LIST
    asks = [
        ("transpose_order_permutation", None),
        ("bytes_endian_present", None),
        ("codec_configuration_declared", {"members": CODEC_MEMBERS}),
    ]
    node = array(codecs=[*transposes, *ARRAY["codecs"]])
    counts = [len(run(p, node, options)) for p, options in asks for _ in range(2)]
    assert counts[0::2] == counts[1::2], "the same findings each time"
    assert len(walked) == 1, "the chains of a long codec list are worked out once"
    short = array()
    for p, options in asks * 2:
        with contextlib.suppress(NotApplicable):  # ARRAY has no transpose codec
            run(p, short, options)
    assert len(walked) > 2, "a short list is worked out each time it is asked (nothing kept for it)"
