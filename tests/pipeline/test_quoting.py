"""Every word of every rule's shell command is quoted.

Read from the rule files themselves: every placeholder of every ``shell:`` directive in the
Snakefile and workflow/rules/*.smk carries ``:q`` (a config value, a wildcard, a file name or a
thread count reaches the command as one word and is never run as code). Seen in a dry run: a
data folder with a space in its name reaches each command as one argument (the dry run prints
the commands; shlex splits them as the shell would)."""

from __future__ import annotations

import ast
import io
import re
import shlex
import string
import tokenize
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.pipeline.helpers import copy_workflow, snakemake, write_config

WORKFLOW_FILES = [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]
_SKIP = (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)


def shell_directives(text: str) -> list[tuple[int, list[tuple[int, str]]]]:
    """``(line, [(line, string literal), ...])`` of every ``shell:`` directive in a Snakemake
    file (its tokens as Python's tokenizer reads them: Snakemake's grammar is Python's with
    directives)."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
              if t.type not in _SKIP]
    found = []
    for i, token in enumerate(tokens[:-1]):
        if token.type == tokenize.NAME and token.string == "shell" and tokens[i + 1].string == ":":
            j, literals = i + 2, []
            while j < len(tokens) and tokens[j].type == tokenize.STRING:
                literals.append((tokens[j].start[0], tokens[j].string))
                j += 1
            found.append((token.start[0], literals))
    return found


def unquoted_words(text: str) -> list[str]:
    """Every placeholder of every ``shell:`` directive in ``text`` without ``:q``, as
    ``line N: {placeholder}``; a command that is not plain string literals (an f-string, a
    variable) counts as unquoted, since its values are formatted in unseen."""
    bad = []
    for line, literals in shell_directives(text):
        if not literals or any("f" in lit.split(lit[-1])[0].lower() for _, lit in literals):
            bad.append(f"line {line}: a shell command that is not plain string literals")
            continue
        for at, literal in literals:
            try:
                fields = list(string.Formatter().parse(ast.literal_eval(literal)))
            except ValueError:  # a brace left open (a placeholder split over two strings)
                bad.append(f"line {at}: an unbalanced brace")
                continue
            bad += [f"line {at}: {{{field}{'!' + conv if conv else ''}{':' + spec if spec else ''}}}"
                    for _, field, spec, conv in fields
                    if field is not None and (spec != "q" or conv)]
    return bad


def test_the_reader_finds_an_unquoted_word():
    """The check below reads what it should: each kind of unquoted word is found."""
    text = ('rule a:\n    shell:\n        "run {wildcards.x:q}"\n        " --n {threads}"\n'
            'rule b:\n    shell: "cp {input} {output:q} > {log:q}"\n'
            'rule c:\n    shell:\n        f"run {NAME}"\n'
            'shell.prefix("export A=1; ")\n')
    assert unquoted_words(text) == ["line 4: {threads}", "line 6: {input}",
                                    "line 8: a shell command that is not plain string literals"]


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_shell_word_is_quoted(path: Path):
    """Each `shell:` of the workflow quotes every placeholder with `:q`: a name from a config
    (`& touch FILE &` as a Grad-CAM data-set key) would otherwise be run by the shell."""
    text = path.read_text()
    assert len(shell_directives(text)) == len(re.findall(r"^\s*shell:", text, flags=re.M))
    assert not unquoted_words(text), f"{path.name}: quote these with :q: {unquoted_words(text)}"


def test_the_workflow_has_shell_commands():
    assert sum(len(shell_directives(p.read_text())) for p in WORKFLOW_FILES) >= 20

ROOT, MIRROR = "my data", "my mirror"


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory, repo, bin_dir):
    """The dry run of the quick profile's DAG (all jobs forced), plus one data preparation,
    with data.root and data.mirror holding spaces, commands printed."""
    workdir = copy_workflow(repo, tmp_path_factory.mktemp("quoting"))
    cfg = write_config(workdir, {"data": {"root": ROOT, "mirror": MIRROR}})
    proc = snakemake(bin_dir, workdir, "all", "results/data/mnist.json", "-n", "-p",
                     "--forceall", "--configfile", str(cfg))
    return proc.stdout


@pytest.fixture(scope="module")
def commands(dry_run):
    """Every shell command of the dry run, split into words as the shell would."""
    lines = [line.split("Shell command:", 1)[1] for line in dry_run.splitlines()
             if "Shell command:" in line and line.split("Shell command:", 1)[1].strip() != "None"]
    assert len(lines) > 50, dry_run[-2000:]
    return [shlex.split(line) for line in lines]


def _action(words: list[str]) -> list[str]:
    """The subcommand of a `sharpness` command line, past the global `--profile P`."""
    rest = words[3:] if words[1:2] == ["--profile"] else words[1:]
    return rest[:2]


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_every_drawing_job_is_given_its_profile(commands):
    """Each figure and table job states its profile's evidence level: the rule gives it the
    profile as the command's first option (`sharpness --profile quick ...`)."""
    drawing = [w for w in commands if _action(w) in (
        ["minorfirst", "plot"], ["eos", "figure"], ["lesam", "build"], ["gradcam", "figure"])
        or (_action(w)[:1] == ["bridges"] and "plot" in w)]
    assert len(drawing) >= 20
    assert all(w[1:3] == ["--profile", "quick"] for w in drawing), drawing


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_every_job_says_what_it_makes(dry_run, commands):
    """Each job that runs a command prints its rule's message (`paper: what (output)`) instead
    of the bare rule block, and so does the aggregate `all` (its input list would be one
    line of every target)."""
    messages = re.findall(r"^Job \d+: (\w+)(?: \w+)?: .+\((\S+)[,)]", dry_run, flags=re.M)
    assert len(messages) == len(commands)
    assert {paper for paper, _ in messages} == {"data", "minorfirst", "lesam", "eos", "bridges",
                                                "claims", "crate"}
    assert all(out.startswith(("results/", "figures/")) for _, out in messages)
    assert re.findall(r"^(?:local)?rule (\w+):", dry_run, flags=re.M) == []
    assert re.search(r"^Job \d+: all: every figure and table", dry_run, flags=re.M)


def _value(words, flag):
    return words[words.index(flag) + 1]


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_data_folders_stay_one_argument(commands):
    """Each rule that passes the data folder (data prepare, eos run and run-many, lesam train,
    gradcam train and maps) gets it whole, and no command splits it."""
    seen = set()
    for words in commands:
        assert "my" not in words, words
        action = " ".join(words[1:3])
        if action == "data prepare":
            assert (_value(words, "--root"), _value(words, "--mirror")) == (ROOT, MIRROR)
        elif action in ("eos run", "eos run-many"):
            assert _value(words, "--data-root") == ROOT
            action = "eos run"
        elif action in ("gradcam train", "gradcam maps"):
            assert _value(words, "--data-root") == ROOT
        elif words[:2] == ["sharpness", "train"]:
            action = "train"
            assert _value(words, "--data-root") == ROOT  # the eos rules' spelling
        else:
            continue
        seen.add(action)
    assert seen == {"data prepare", "eos run", "gradcam train", "gradcam maps", "train"}


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_minorfirst_commands_name_their_config_file(dry_run, commands):
    """Every minorfirst and Grad-CAM job prints a command line of at most ``LONGEST``
    characters; those that read settings name their job's file (an input the plan wrote under
    results/minorfirst/configs/), never a `--params` config."""
    lines = [line.split("Shell command:", 1)[1].strip() for line in dry_run.splitlines()
             if "Shell command:" in line and line.split("Shell command:", 1)[1].strip() != "None"]
    ours = [(line, _action(words)) for line, words in zip(lines, commands, strict=True)
            if _action(words)[:1] in (["minorfirst"], ["gradcam"])]
    assert {" ".join(action) for _, action in ours} == {
        "minorfirst run", "minorfirst plot", "gradcam train", "gradcam maps", "gradcam figure"}
    assert not [line for line, _ in ours if "--params" in line]
    assert all(" --config-file results/minorfirst/configs/" in line
               for line, action in ours if action != ["minorfirst", "plot"])
    too_long = [line[:120] for line, _ in ours if len(line) > LONGEST]
    assert not too_long, f"minorfirst commands over {LONGEST} characters: {too_long}"


#: the longest shell command a job of the lesam runs may print (issue 50: a reader of the
#: dry run sees which run a job is and which file holds its config)
LONGEST = 300


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_lesam_commands_name_their_config_file(dry_run, commands):
    """Every lesam job (training, GLMC, signal, eval, build) prints a command line of at most
    ``LONGEST`` characters: it names its job's config file (an input the plan wrote), not
    the config."""
    lines = [line.split("Shell command:", 1)[1].strip() for line in dry_run.splitlines()
             if "Shell command:" in line and line.split("Shell command:", 1)[1].strip() != "None"]
    assert len(lines) == len(commands)
    lesam = [line for line, words in zip(lines, commands, strict=True)
             if words[:2] == ["sharpness", "train"] or "lesam" in _action(words)[:1]]
    assert len(lesam) >= 40, "the quick profile's lesam jobs are missing from the dry run"
    assert {" ".join(_action(shlex.split(line))) for line in lesam} == {
        "train --config-file", "lesam glmc", "lesam signal", "lesam eval", "lesam build"}
    assert all(" --config-file results/lesam/configs/" in line for line in lesam), lesam
    too_long = [line[:120] for line in lesam if len(line) > LONGEST]
    assert not too_long, f"lesam commands over {LONGEST} characters: {too_long}"


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_eos_and_bridges_commands_name_their_config_file(dry_run, commands):
    """Every eos and bridges job prints a command line of at most ``LONGEST`` characters: a
    computing job and an eos figure name their job's config file (results/<paper>/configs/,
    written by the plan), never ``--params``; the data folder is ``--data-root``; a bridge
    figure names its run folder."""
    lines = [line.split("Shell command:", 1)[1].strip() for line in dry_run.splitlines()
             if "Shell command:" in line and line.split("Shell command:", 1)[1].strip() != "None"]
    ours = [(line, words) for line, words in zip(lines, commands, strict=True)
            if _action(words)[:1] in (["eos"], ["bridges"])]
    assert {" ".join(_action(w)) for _, w in ours} >= {
        "eos toy", "eos run", "eos run-many", "eos figure", "bridges lesam-diagonal",
        "bridges sam-eos"}
    for line, words in ours:
        assert "--params" not in words, line[:120]
        if "plot" in words:
            assert _value(words, "--run").startswith("results/bridges/"), line
        else:
            paper = _action(words)[0]
            assert _value(words, "--config-file").startswith(f"results/{paper}/configs/"), line
        if _action(words) in (["eos", "run"], ["eos", "run-many"], ["bridges", "sam-eos"]) \
                and "run" in words:
            assert _value(words, "--data-root") == ROOT, line
    too_long = [line[:120] for line, _ in ours if len(line) > LONGEST]
    assert not too_long, f"eos/bridges commands over {LONGEST} characters: {too_long}"


@pytest.mark.workflow  # reads a dry run of the whole quick profile
def test_no_line_of_a_job_is_over_the_limit(dry_run, commands):
    """Every line the dry run prints for its jobs (message, reason, command) is at most
    ``LONGEST`` characters, and no command carries settings as ``--params`` JSON; only
    Snakemake's closing summary of reasons, a list of rule names, is left out. The run is
    forced, so each reason reads "Forced execution"; on a tree where nothing is built yet,
    Snakemake's reason for a job lists its missing outputs and every input another job
    makes (a table's runs), which can be longer: those lines name files, not settings."""
    jobs = dry_run.split("\nReasons:\n", 1)[0]
    too_long = [line[:120] for line in jobs.splitlines() if len(line) > LONGEST]
    assert not too_long, f"dry-run lines over {LONGEST} characters: {too_long}"
    assert not [w for w in commands if "--params" in w]
