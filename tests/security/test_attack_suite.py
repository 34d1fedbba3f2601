"""A generated attack suite: Hypothesis writes the names, config files and caption text.

Each property states what must hold for every input an attacker could write, not for the
examples someone thought of:

* a name is accepted exactly when it matches the documented rule in full; an accepted name is
  one plain shell word and a path component that stays inside its folder; a refused one is
  refused with its key named;
* a config file of plain data reads back as written; one holding a yte template or a YAML
  tag anywhere is refused, the key named, and nothing in it runs;
* a seed offset is accepted exactly within its bounds, and every offset seed stays below
  numpy's 2^32;
* any caption or record text is shown as typed in LaTeX and Markdown and keeps a table's
  shape;
* a ledger's data archive (any member names, links, folders, sizes, counts, limits) unpacks
  exactly when it is plain and within its limits, and nothing lands outside its folder;
* any crate metadata is checked or refused in one line, and a figure edited in a crate never
  passes, whatever the forger restates in the crate's unsigned metadata.

Example counts are modest (each property runs in about a second) so the suite stays in the
fast tier; ``derandomize`` makes a failure reproducible on every run, and no example database
is written.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import re
import shlex
import tarfile
import tempfile
import zipfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharpness import escape
from sharpness.claims.snapshot_data import unpack
from sharpness.config.check import load_schema
from sharpness.config.plain import TEMPLATE_KEYS, load_plain
from sharpness.crate.check import audit_crate
from sharpness.errors import ConfigError, SharpnessError, key_path
from sharpness.jobs import check_workflow_config
from sharpness.limits import ArchiveLimits, LimitExceeded
from sharpness.mappings import offset_seeds
from sharpness.plots.save import table_latex, table_markdown
from tests.conftest import REPO
from tests.security.crates import FIGURE, METADATA, OTHER, edit_graph, pack, repack, tiny_build
from tests.security.test_escaping import read_latex, read_markdown

SCHEMA = load_schema(REPO / "workflow/config/config.schema.yaml")
QUICK = yaml.safe_load((REPO / "workflow/config/quick.yaml").read_text())
# the smallest config the schema accepts, with the section whose keys are data-set names
BASE = {"profile": QUICK["profile"], "data": QUICK["data"], "gradcam": QUICK["gradcam"]}
MNIST = QUICK["gradcam"]["datasets"]["mnist"]
# the documented rule, written here independently of the schema's pattern
RULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.]{0,63}")

FAST = settings(max_examples=30, deadline=2000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])

# names near the rule: its own characters, with separators, line breaks and shell words mixed in
NEAR = st.text(alphabet=st.sampled_from("aZ09_.-/ \n\r\t$;&|`'\"\\*?~<>{}()!#%^" + "é\x00"),
               max_size=70)
NAMES = st.one_of(NEAR, st.text(max_size=70), st.from_regex(RULE, fullmatch=True))


def _named(name: str) -> bool:
    return RULE.fullmatch(name) is not None and ".." not in name


@FAST
@given(name=NAMES)
def test_a_name_is_accepted_exactly_when_it_matches_the_rule_in_full(name) -> None:
    config = copy.deepcopy(BASE)
    config["gradcam"]["datasets"] = {name: MNIST}
    config["gradcam"]["claim"] = dict(config["gradcam"]["claim"], dataset=name)
    try:
        check_workflow_config(config, SCHEMA)
    except ConfigError as error:
        assert not _named(name)
        assert str(error).startswith("config key gradcam.") and repr(name) in str(error)
        return
    assert _named(name)
    assert shlex.split(shlex.quote(name)) == [name] and shlex.quote(name) == name
    root = Path("/project/results/gradcam")
    assert (root / name).resolve().parent == root


PLAIN = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20).filter(lambda s: not s.startswith("?")),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(min_size=1, max_size=12).filter(
            lambda s: not s.startswith("?") and s not in TEMPLATE_KEYS), inner, max_size=4),
    max_leaves=20)
TEMPLATES = st.sampled_from([*TEMPLATE_KEYS, "?if True", "?for x in range(9)", "?else"])


@FAST
@given(data=st.dictionaries(st.text(min_size=1, max_size=12).filter(
    lambda s: not s.startswith("?") and s not in TEMPLATE_KEYS), PLAIN, max_size=5))
def test_a_config_of_plain_data_reads_back_as_written(data) -> None:
    assert load_plain(yaml.safe_dump(data), "gen.yaml") == data


def _plant(data: dict, where: list[int], key: str, value: object) -> list:
    """Put ``key: value`` into the mapping reached by following ``where`` (indices into the
    mapping keys); returns the key path of the planted key."""
    node, path = data, []
    for index in where:
        children = [k for k, v in node.items() if isinstance(v, dict)]
        if not children:
            break
        child = children[index % len(children)]
        node, path = node[child], [*path, child]
    node[key] = value
    return [*path, key]


NESTED = st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True),
                         st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), PLAIN,
                                         max_size=3), min_size=1, max_size=3)


@FAST
@given(data=NESTED, where=st.lists(st.integers(0, 9), max_size=3), key=TEMPLATES,
       code=st.sampled_from(["__import__('os').system('id')", "open('x','w')", "1"]))
def test_a_yte_template_anywhere_is_refused_naming_its_key(data, where, key, code) -> None:
    path = _plant(data, where, key, [code] if key == "__definitions__" else {"x": code})
    with pytest.raises(ConfigError) as info:
        load_plain(yaml.safe_dump(data), "gen.yaml")
    assert f"config file 'gen.yaml', key {key_path(path)}: the key {key!r}" in str(info.value)


@FAST
@given(data=NESTED, where=st.lists(st.integers(0, 9), max_size=3),
       tag=st.sampled_from(["!!python/object/apply:os.system ['id']", "!!binary aGk=",
                            "!!set {a: null}", "!x 1", "!!str 3", "!!timestamp 2001-12-14"]))
def test_a_yaml_tag_anywhere_is_refused_naming_its_key(data, where, tag) -> None:
    path = _plant(data, where, "tagged", "PLACEHOLDER")
    text = yaml.safe_dump(data).replace("PLACEHOLDER", tag)
    with pytest.raises(ConfigError) as info:
        load_plain(text, "gen.yaml")
    assert f"config file 'gen.yaml', key {key_path(path)}: the YAML tag" in str(info.value)


@FAST
@given(offset=st.one_of(st.integers(), st.integers(-10, 10), st.integers(2**31 - 5, 2**31 + 5),
                        st.integers(10**18, 10**40)),
       seed=st.integers(0, 2**31 - 1))
def test_a_seed_offset_is_accepted_exactly_within_its_bounds(offset, seed) -> None:
    config = dict(copy.deepcopy(BASE), seed_offset=offset)
    config["gradcam"]["panel"] = dict(config["gradcam"]["panel"], seed=seed)
    try:
        check_workflow_config(config, SCHEMA)
    except ConfigError as error:
        assert not 0 <= offset < 2**31
        assert str(error).startswith(f"config key seed_offset: {offset} is ")
        return
    assert 0 <= offset < 2**31
    offset_seeds(config)
    assert 0 <= config["gradcam"]["panel"]["seed"] < 2**32


TEXT = st.text(max_size=40) | st.text(alphabet=st.sampled_from("^5c{}$\\%&#_|\n<>~`*[]!a "),
                                      max_size=40)


@FAST
@given(text=TEXT)
def test_any_text_is_shown_as_typed_in_each_format(text) -> None:
    shown = re.sub(r"[\x00-\x1f\x7f-\x9f]", " ", text)
    assert read_latex(escape.latex(text)) == shown
    assert read_markdown(escape.markdown(text)) == shown


@FAST
@given(cells=st.lists(TEXT, min_size=1, max_size=4), caption=TEXT)
def test_any_caption_and_cell_keep_the_tables_shape(cells, caption) -> None:
    columns = [f"c{i}" for i in range(len(cells))]
    row = dict(zip(columns, cells, strict=True))
    md = table_markdown([row], columns, caption).rstrip("\n").split("\n")
    assert len(md) == 5 and len(re.findall(r"(?<!\\)(?:\\\\)*\|", md[2])) == len(cells) + 1
    tex = table_latex([row], columns, caption)
    assert len(tex.splitlines()) == 11 and tex.count(r"\caption{") == 1
    assert "<img" not in "".join(md) and "^^" not in tex


# --- archives and crates (issue 52) --------------------------------------------------------

SAFE_MEMBER = st.from_regex(r"[a-z]{1,4}(/[a-z]{1,4}){0,2}\.csv", fullmatch=True)
HOSTILE_MEMBER = st.sampled_from(["../x.csv", "/tmp/x.csv", "a/../../x.csv", "a/../../../etc",
                                  "..", "./../x.csv"])
MEMBERS = st.lists(st.tuples(st.one_of(SAFE_MEMBER, SAFE_MEMBER, HOSTILE_MEMBER),
                             st.binary(max_size=200),
                             st.sampled_from(["file", "file", "file", "dir", "symlink"])),
                   max_size=10, unique_by=lambda m: m[0])
LIMITS = st.builds(ArchiveLimits, st.integers(1, 10), st.integers(1, 200), st.integers(1, 1000))


def _tar(members: list[tuple[str, bytes, str]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = tarfile.DIRTYPE if kind == "dir" else tarfile.SYMTYPE
                info.linkname = "/etc/passwd" if kind == "symlink" else ""
                tar.addfile(info)
    return buf.getvalue()


@FAST
@given(members=MEMBERS, limits=LIMITS)
def test_a_ledger_archive_unpacks_exactly_when_it_is_plain_and_within_its_limits(
        members, limits) -> None:
    """Any generated archive (names escaping the folder, links, folders, sizes, counts):
    unpacked exactly when every member is a plain file under the folder and the count, each
    size and the total are within the limits, then each member holds its bytes; otherwise
    refused (a limit named when only a limit was passed), and nothing lands outside."""
    plain = all(kind == "file" and not name.startswith("/") and ".." not in Path(name).parts
                for name, _, kind in members)
    within = (len(members) <= limits.entries
              and all(len(data) <= limits.member_bytes for _, data, _ in members)
              and sum(len(data) for _, data, _ in members) <= limits.total_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        archive, dest = Path(tmp) / "x.figures.tar.gz", Path(tmp) / "a" / "b" / "dest"
        archive.write_bytes(_tar(members))
        dest.mkdir(parents=True)
        try:
            unpack(archive, dest, limits)
        except LimitExceeded as exc:
            assert not within and "\n" not in str(exc)
        except SharpnessError as exc:
            assert not plain and "\n" not in str(exc)
        else:
            assert plain and within
            assert {n: (dest / n).read_bytes() for n, _, _ in members} == \
                {n: d for n, d, _ in members}
        outside = [p for p in Path(tmp).rglob("*") if not p.is_relative_to(dest)
                   and p not in (archive, dest.parent, dest.parent.parent)]
        assert outside == []


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=10)
ENTITY_KEYS = st.sampled_from(["@id", "@type", "sha256", "result", "subjectOf", "hasPart",
                               "mainEntity", "version", "identifier"])
ENTITY = st.dictionaries(ENTITY_KEYS, JSON | st.sampled_from(
    ["./", "File", "CreateAction", "figures/p/a.csv", "figures/p/a.provenance.json"]),
    max_size=6)


@FAST
@given(graph=st.one_of(JSON, st.lists(ENTITY, max_size=5)))
def test_any_crate_metadata_is_checked_or_refused_in_one_line(graph) -> None:
    """Generated metadata (any JSON, entities of any shape): `audit --crate` either reports
    its checks or refuses the crate with one line; never another exception."""
    with tempfile.TemporaryDirectory() as tmp:
        crate = Path(tmp) / "c.zip"
        with zipfile.ZipFile(crate, "w") as zf:
            zf.writestr("ro-crate-metadata.json", json.dumps({"@graph": graph}))
            zf.writestr("figures/p/a.csv", b"x,y\n")
        try:
            audit_crate(crate, ["figures/p/a.csv"])
        except SharpnessError as exc:
            assert "\n" not in str(exc)


@pytest.fixture(scope="module")
def tiny_crate(tmp_path_factory) -> Path:
    root = tiny_build(tmp_path_factory.mktemp("suite") / "build")
    assert pack(root, root.parent / "c.zip") == 0
    return root.parent / "c.zip"


@FAST
@given(forged=st.binary(min_size=1, max_size=40), restate=st.booleans(),
       job=st.sampled_from([None, FIGURE, OTHER]), swap=st.booleans())
def test_an_edited_figure_never_passes_whatever_the_crate_says(tiny_crate, forged, restate,
                                                               job, swap) -> None:
    """The figure's bytes edited in the crate, with any mix of the forger's moves (its stated
    SHA-256 updated, its job pointed at its own or another genuine record or at none, its
    sidecar swapped for another genuine record): never an audit without a failed check."""
    side = {p: p.replace(".csv", ".provenance.json") for p in (FIGURE, OTHER)}
    with zipfile.ZipFile(tiny_crate) as src:
        other = src.read(side[OTHER])

    def graph(entities: dict[str, dict]) -> None:
        if restate:
            entities[FIGURE]["sha256"] = hashlib.sha256(forged).hexdigest()
            if swap:
                entities[side[FIGURE]]["sha256"] = hashlib.sha256(other).hexdigest()
        action = next(e for e in entities.values() if e.get("result") == {"@id": FIGURE})
        if job is None:
            action.pop("subjectOf")
        else:
            action["subjectOf"] = {"@id": side[job]}

    edits = {METADATA: edit_graph(graph), FIGURE: lambda _: forged}
    if swap:
        edits[side[FIGURE]] = lambda _: other
    with tempfile.TemporaryDirectory() as tmp:
        crate = repack(tiny_crate, Path(tmp) / "forged.zip", edits)
        _, found = audit_crate(crate, [FIGURE])
    assert found
