"""Pack loading: PackError messages name the file, the rule id and the field; extends and overrides."""

from __future__ import annotations

import re
import textwrap

import pytest

from spec_validate.engine.loader import builtin_packs, load_pack, packs_to_run
from spec_validate.errors import PackError
from spec_validate.model import Level

HEADER = """\
spec: {name: demo, title: Demo, version: "1.0", source: demo.md}
"""

RULE = """\
  - id: demo.group.thing
    level: SHOULD
    clause: The group SHOULD have a thing.
    section: Things
    spec_version: "1.0"
    applies_to: {kind: group}
    check:
      - attr_present: {key: thing}
"""


def write(tmp_path, text, name="pack.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_load_pack_passes_minimal_pack(tmp_path):
    pack = load_pack(write(tmp_path, HEADER + "rules:\n" + RULE))
    (rule,) = pack.rules
    assert (rule.id, rule.level, rule.spec_level, rule.basis) == ("demo.group.thing", Level.SHOULD, Level.SHOULD, "stated")


@pytest.mark.parametrize(
    "text,expected",
    [
        pytest.param(
            HEADER + "rules:\n" + RULE.replace("attr_present", "attr_presnt"),
            "demo.group.thing: check[0]: unknown primitive 'attr_presnt'",
            id="unknown-primitive",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE.replace("{key: thing}", "{key: thing, keyy: 1}"),
            "demo.group.thing: check[0].attr_present: unknown option ('keyy' was unexpected)",
            id="unknown-option",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE.replace("{key: thing}", "{key: 3}"),
            "demo.group.thing: check[0].attr_present.key: 3 is not of type 'string'",
            id="bad-option-type",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE.replace("    section: Things\n", ""),
            "demo.group.thing: 'section' is a required property",
            id="missing-rule-field",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE.replace("level: SHOULD", "level: SHALL"),
            "demo.group.thing: level: 'SHALL' is not one of",
            id="bad-level",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE + "    colour: red\n",
            "demo.group.thing: unknown key 'colour' (only keys starting x- are free)",
            id="unknown-rule-key",
        ),
        pytest.param(
            HEADER + "rulez: []\n",
            "(top level): unknown key 'rulez' (only keys starting x- are free)",
            id="unknown-top-level-key",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE.replace("applies_to: {kind: group}", "applies_to: {kindd: group}"),
            "demo.group.thing: applies_to: unknown key 'kindd'",
            id="unknown-selector-key",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE + "    basis: derived\n",
            "demo.group.thing: 'rationale' is a required property",
            id="derived-without-rationale",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE + "    writers: [{name: w, versions: '1', note: n}]\n",
            "demo.group.thing: writers[0]: 'when' is a required property",
            id="writer-note-without-when",
        ),
        pytest.param(
            HEADER + "rules:\n" + RULE + "    writers: [{name: w, versions: '1', note: n, when: {}}]\n",
            "demo.group.thing: writers[0].when: {} should be non-empty",
            id="writer-note-with-empty-when",
        ),
        pytest.param(HEADER + "rules: [\n", "not valid YAML at line", id="bad-yaml"),
        pytest.param("- 1\n- 2\n", "a pack must be a mapping, not list", id="not-a-mapping"),
        pytest.param(HEADER + "rules:\n" + RULE + RULE, "demo.group.thing: rule id defined twice", id="duplicate-id"),
    ],
)
def test_load_pack_fails_with_file_rule_and_field(tmp_path, text, expected):
    path = write(tmp_path, text)
    with pytest.raises(PackError) as info:
        load_pack(path)
    message = str(info.value)
    assert message.startswith(f"{path}: "), message
    assert expected in message, message
    assert "\n" not in message


def test_load_pack_passes_a_writer_notes_values_as_text(tmp_path):
    text = HEADER + "rules:\n" + RULE + "    writers: [{name: w, versions: '1', note: n, when: {key: [thing, 0], x: false}}]\n"
    (rule,) = load_pack(write(tmp_path, text)).rules
    assert rule.writers[0].when == (("key", ("thing", "0")), ("x", ("false",)))


def test_load_pack_passes_x_keys_at_top_and_in_rules(tmp_path):
    text = HEADER + "x-anchors: {a: 1}\nrules:\n" + RULE + "    x-note: anything\n"
    assert len(load_pack(write(tmp_path, text)).rules) == 1


def test_load_pack_passes_extends_with_override(tmp_path):
    base = write(tmp_path, HEADER + "rules:\n" + RULE, "base.yaml")
    child = write(
        tmp_path,
        """\
        spec: {name: strict, title: Strict, version: "1.0", source: demo.md}
        extends: base.yaml
        overrides:
          demo.group.thing: {level: MUST}
        """,
        "child.yaml",
    )
    assert base.exists()
    (rule,) = load_pack(child).rules
    assert rule.level is Level.MUST and rule.spec_level is Level.SHOULD


def test_load_pack_passes_extends_builtin_anndata(tmp_path):
    builtin = builtin_packs()[0]
    some = next(r for r in builtin.rules if r.level is Level.SHOULD)
    child = write(
        tmp_path,
        f"""\
        spec: {{name: mine, title: Mine, version: "1", source: x.md}}
        extends: anndata
        overrides:
          {some.id}: {{level: MUST}}
        """,
    )
    pack = load_pack(child)
    got = {r.id: r for r in pack.rules}[some.id]
    assert (got.level, got.spec_level) == (Level.MUST, Level.SHOULD)
    assert len(pack.rules) == len(builtin.rules)
    assert pack.dimensions == builtin.dimensions


def test_load_pack_fails_override_of_unknown_rule(tmp_path):
    path = write(tmp_path, HEADER + "overrides:\n  demo.nope.x: {level: MUST}\nrules:\n" + RULE)
    with pytest.raises(PackError, match=re.escape("overrides: no rule 'demo.nope.x'")):
        load_pack(path)


def test_load_pack_fails_missing_file(tmp_path):
    with pytest.raises(PackError, match="cannot read"):
        load_pack(tmp_path / "missing.yaml")


def test_builtin_packs_passes_load():
    assert builtin_packs() and all(p.rules for p in builtin_packs())


def test_packs_survive_pickling():
    # Packs and rules cross process boundaries (worker processes, Dask tasks built by users): plain records.
    import pickle

    for pack in builtin_packs():
        assert pickle.loads(pickle.dumps(pack)) == pack


# ---------------------------------------------------------------- packs_to_run: a pack that extends another replaces it


def extending(tmp_path, name, extends, rules="rules: []\n", overrides=""):
    text = f'spec: {{name: {name}, title: {name}, version: "1", source: x.md}}\nextends: {extends}\n{overrides}{rules}'
    return load_pack(write(tmp_path, text, f"{name}.yaml"))


def test_load_pack_passes_rules_of_an_extending_pack_carry_its_name(tmp_path):
    some = next(r for r in builtin_packs()[0].rules if r.level is Level.SHOULD)
    pack = extending(tmp_path, "mine", "anndata", overrides=f"overrides:\n  {some.id}: {{level: MUST}}\n")
    got = {r.id: r for r in pack.rules}[some.id]
    assert (got.pack, got.level, got.spec_level, got.builtin) == ("mine", Level.MUST, Level.SHOULD, True)
    assert {r.pack for r in pack.rules} == {"mine"} and pack.bases == ("anndata",)


def test_load_pack_passes_rules_of_a_user_pack_are_not_builtin(tmp_path):
    (rule,) = load_pack(write(tmp_path, HEADER + "rules:\n" + RULE)).rules
    assert not rule.builtin
    assert all(r.builtin for p in builtin_packs() for r in p.rules)


def test_packs_to_run_passes_builtins_unchanged_without_extra_packs():
    assert packs_to_run(builtin_packs(), []) == list(builtin_packs())


def test_packs_to_run_passes_extending_pack_replaces_its_builtin_base(tmp_path):
    mine = extending(tmp_path, "mine", "anndata")
    names = [p.name for p in packs_to_run(builtin_packs(), [mine])]
    assert names == [p.name for p in builtin_packs() if p.name != "anndata"] + ["mine"]


def test_packs_to_run_passes_chain_replaces_every_pack_it_extends(tmp_path):
    middle = extending(tmp_path, "middle", "anndata")
    top = extending(tmp_path, "top", "middle.yaml")
    assert top.bases == ("middle", "anndata") and {r.pack for r in top.rules} == {"top"}
    # Given together (configuration and --pack), the chain's top carries every rule once.
    names = [p.name for p in packs_to_run(builtin_packs(), [middle, top])]
    assert "anndata" not in names and "middle" not in names and names[-1] == "top"


def test_packs_to_run_passes_pack_extending_nothing_runs_beside_builtins(tmp_path):
    own = load_pack(write(tmp_path, HEADER + "rules:\n" + RULE))
    assert packs_to_run(builtin_packs(), [own]) == [*builtin_packs(), own]


def test_packs_to_run_passes_one_file_given_twice_runs_once(tmp_path):
    mine = extending(tmp_path, "mine", "anndata")
    again = load_pack(tmp_path / "mine.yaml")
    builtin_file = load_pack(builtin_packs()[0].path)
    run = packs_to_run(builtin_packs(), [mine, again, builtin_file])
    assert [p.name for p in run].count("mine") == 1 and "anndata" not in [p.name for p in run]


def test_packs_to_run_fails_two_packs_extending_one_base(tmp_path):
    a = extending(tmp_path, "lab-a", "anndata")
    b = extending(tmp_path, "lab-b", "anndata")
    with pytest.raises(PackError, match=r"lab-b.yaml: both lab-a \(.*lab-a.yaml\) and lab-b extend anndata; use one of them"):
        packs_to_run(builtin_packs(), [a, b])


def test_packs_to_run_fails_rule_id_of_another_pack_redefined(tmp_path):
    some = builtin_packs()[0].rules[0]
    own = load_pack(write(tmp_path, HEADER + "rules:\n" + RULE.replace("demo.group.thing", some.id)))
    with pytest.raises(PackError, match=f"pack.yaml: {some.id}: rule id also defined in .*extend it and use overrides"):
        packs_to_run(builtin_packs(), [own])


LEGACY = """\
legacy:
  clause: Older files differ.
  section: Things
  still_checked: [{kept}]
  eras:
    old: written before the spec.
    older:
      hdf5: an HDF5 file of before.
      zarr-*: a Zarr store of before.
"""


def test_load_pack_passes_legacy_with_texts_per_storage_and_clauses_still_checked(tmp_path):
    pack = load_pack(write(tmp_path, HEADER + LEGACY.format(kept="demo.group") + "rules:\n" + RULE))
    legacy = pack.legacy
    assert legacy.still_checked == ("demo.group",) and legacy.keeps("demo.group.thing")
    assert not legacy.keeps("demo.groupx.thing") and not legacy.keeps("demo")
    assert legacy.text("old", "zarr-v3") == "written before the spec."  # one text: any storage
    assert legacy.text("older", "hdf5") == "an HDF5 file of before."
    assert legacy.text("older", "zarr-v2") == "a Zarr store of before."
    assert legacy.text("older", "tiledb") == ""


def test_load_pack_fails_legacy_still_checked_naming_no_rule(tmp_path):
    # A name that keeps no clause would silently check nothing on a legacy file: a typo is an error at load time.
    with pytest.raises(PackError, match=r"legacy\.still_checked: 'demo\.grup' names no rule"):
        load_pack(write(tmp_path, HEADER + LEGACY.format(kept="demo.grup") + "rules:\n" + RULE))
