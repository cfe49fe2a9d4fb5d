"""The ``routerlab`` command line.

Long because every command's options and help live in this one Typer app (run_cmd and
optimize_cmd still hold logic to move out: issue 38, step 6).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from routerlab.agents.errors import RouterlabError

__all__ = ["app"]

app = typer.Typer(
    name="routerlab",
    help="Which router should dispatch a text-to-SQL assistant's requests, and at what cost?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
lm_app = typer.Typer(help="Language-model backends.", no_args_is_help=True)
app.add_typer(lm_app, name="lm")
server_app = typer.Typer(help="Services shared by a team (an MLflow tracking server).", no_args_is_help=True)
app.add_typer(server_app, name="server")

_err = Console(stderr=True)
# piped output (CI logs, `| tee`) would otherwise wrap the comparison tables at 80 columns
_out = Console(width=None if sys.stdout.isatty() else 200)
F = TypeVar("F", bound=Callable[..., Any])

LM_HELP = "LM spec: local, local:0.5b, local:/path.gguf, or a LiteLLM model string such as openai/gpt-4o-mini."
LMOpt = Annotated[str, typer.Option("--lm", help=LM_HELP)]
ApiBaseOpt = Annotated[str | None, typer.Option("--lm-api-base", help="API base URL for OpenAI-compatible servers.")]
DbDirOpt = Annotated[
    str | None,
    typer.Option(
        "--db-dir",
        help="Folder of the databases (<db_id>/<db_id>.sqlite) when they are not beside the dataset "
        "(sparc, cosql; config dataset_args.db_dir).",
    ),
]
RunConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="YAML/JSON run settings (dataset, dataset_args such as the mixer's base/seed/ratios, split, limit, "
        "lm, scorers, pipeline; routers are named with --router); options given here win.",
    ),
]


def _clean_errors(fn: F) -> F:
    """Turn routerlab errors into a clear message and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RouterlabError as exc:
            _err.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


@lm_app.command("check")
@_clean_errors
def lm_check_cmd(lm: LMOpt = "local", lm_api_base: ApiBaseOpt = None) -> None:
    """Load the LM, make one completion and one tool call, and print timings."""
    from routerlab.agents.lm.check import format_report, lm_check

    _out.print(format_report(lm_check(lm, api_base=lm_api_base)), highlight=False)


#: exit code of a run stopped because another process kept the results store locked (EX_TEMPFAIL)
STORE_BUSY_EXIT = 75


@app.command("ask")
@_clean_errors
def ask_cmd(
    question: Annotated[str, typer.Argument(help="The request, e.g. 'How many areas have EV charging?'")],
    db: Annotated[
        Path | None, typer.Option("--db", help="DuckDB or SQLite file (default: the built-in database).")
    ] = None,
    router_name: Annotated[str, typer.Option("--router", help="Router name (see `routerlab routers`).")] = "rules",
    lm: LMOpt = "local",
    lm_api_base: ApiBaseOpt = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Call this agent directly (e.g. fix_sql).")] = None,
    reply: Annotated[str | None, typer.Option("--reply", help="Answer to a clarifying question, if asked.")] = None,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            help="Continue this conversation (its earlier turns are context: 'and in 2023?' follows up); "
            "without it a new one starts and its id is printed.",
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option("--user", help="Who asks (the API's user_id): a conversation belongs to its first user."),
    ] = None,
    shared_conversations: Annotated[
        bool,
        typer.Option("--shared-conversations", help="Let any --user continue any conversation (single-user use)."),
    ] = False,
) -> None:
    """Answer one request, printing the pipeline's progress events live."""
    from routerlab.ask import ask

    code = ask(
        question,
        db,
        router_name,
        lm,
        lm_api_base,
        agent,
        reply,
        _out,
        conversation=conversation,
        user=user,
        shared_conversations=shared_conversations,
    )
    raise typer.Exit(code)


DEFAULT_ROUTERS = "rules,llm,dspy,oracle,single_call"
#: `route`'s default: the routers that decide in under a second (handoff and retrieval generate
#: their decisions, several seconds each on the embedded model: name them to include them)
ROUTE_DEFAULT_ROUTERS = "rules,semantic,hybrid,llm,dspy,random"
#: seconds per example and router on the embedded model, end to end: the p50 measured on the whole
#: of spider-dev-a on 2 cores (docs/results/2026-11-24-sql-quality.md); an order of magnitude only
LOCAL_SECONDS_PER_EXAMPLE = 13.0
DEFAULT_LIMIT = 7  # one request per intent


def _run_defaults(dataset: str | None, config_file: Path | None) -> dict[str, Any]:
    """The CLI's own defaults for a new session.

    The main job's short stratified subset is for the built-in benchmark; a dataset the user points
    at (Spider, BIRD, a mixed set) is scored whole unless ``--limit`` or the config file says
    otherwise, so its figures are the dataset's and not a 7-question sample's.
    """
    from routerlab.config import read_mapping_file

    file_values = read_mapping_file(config_file) if config_file else {}
    chosen = dataset or file_values.get("dataset") or "builtin"
    return {"limit": DEFAULT_LIMIT} if chosen == "builtin" else {}


@app.command("run")
@_clean_errors
def run_cmd(
    router_names: Annotated[
        str | None, typer.Option("--router", help=f"Comma-separated routers to compare. \\[default: {DEFAULT_ROUTERS}]")
    ] = None,
    dataset_name: Annotated[
        str | None, typer.Option("--dataset", help="Dataset name (builtin, spider, bird, ...). \\[default: builtin]")
    ] = None,
    dataset_path: Annotated[
        str | None, typer.Option("--dataset-path", help="Dataset directory or file (on-disk formats).")
    ] = None,
    db_dir: DbDirOpt = None,
    split: Annotated[str | None, typer.Option("--split", help="train, dev, test or all. \\[default: dev]")] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            help=f"At most N examples (stratified by intent); 0 = all. \\[default: {DEFAULT_LIMIT} for the "
            "built-in benchmark, all for other datasets]",
        ),
    ] = None,
    lm: Annotated[
        str | None,
        typer.Option(
            "--lm",
            help="LM spec: local, local:0.5b, local:/path.gguf, a LiteLLM model string such as "
            "openai/gpt-4o-mini, or scripted:NAME (a deterministic test double for tests/CI). \\[default: local]",
        ),
    ] = None,
    lm_api_base: ApiBaseOpt = None,
    concurrency: Annotated[
        int | None, typer.Option("--concurrency", min=1, help="Worker threads (remote LMs). \\[default: 1]")
    ] = None,
    router_arg: Annotated[
        list[str] | None, typer.Option("--router-arg", help="ROUTER.PARAM=VALUE, repeatable.")
    ] = None,
    config_file: RunConfigOpt = None,
    scorer_names: Annotated[
        str | None,
        typer.Option(
            "--scorer",
            help="Comma-separated scorers (registered names, your own included; see docs/extending.md). "
            "\\[default: ex,chain_valid,trajectory,chain_f1,route,success,abstain]",
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume", help="Finish an interrupted session by its id (with its recorded routers and settings)."
        ),
    ] = None,
    tracking_uri: Annotated[
        str, typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store.")
    ] = "sqlite:///mlflow.db",
    store: Annotated[str, typer.Option("--store", help="DuckDB results store.")] = ".routerlab/results.duckdb",
    no_mlflow: Annotated[bool, typer.Option("--no-mlflow", help="Skip MLflow logging.")] = False,
    attempts: Annotated[
        int | None, typer.Option("--attempts", min=1, help="Runs per example (pass^k). \\[default: 1]")
    ] = None,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            help="Inject faults: rate=0.2,seed=7[,kinds=lm_error+timeout+rate_limit+invalid_tool_call+empty"
            "+slow_sql+db_error] (reliability testing; recorded in the run's params).",
        ),
    ] = None,
    deadline_s: Annotated[
        float | None,
        typer.Option(
            "--deadline-s",
            help="Wall-clock budget of the whole run; examples not started in time are recorded as "
            "timeouts (error class run_deadline) and rerun by --resume.",
        ),
    ] = None,
    no_cache: Annotated[
        bool,
        typer.Option(
            "--no-cache",
            help="Turn the LM response cache off for this run: every LM call is computed (observed cost = cold "
            "cost). Config field: lm_cache: false.",
        ),
    ] = False,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay",
            help="Reuse sub-agent outcomes stored by earlier --replay runs (same request, arguments, database "
            "and LM) and store new ones: a second router pays only for its own decisions and new calls.",
        ),
    ] = False,
    skip_bad_databases: Annotated[
        bool,
        typer.Option(
            "--skip-bad-databases",
            help="Leave out (as not run) the examples of a database that does not open or lacks their "
            "tables, instead of refusing the run.",
        ),
    ] = False,
) -> None:
    """Compare routers. With no option that picks routers or data: the main job, ending with a verdict.

    The main job scores the first decision of every fast router on the built-in dev split (111
    requests), runs hybrid, oracle and single_call end to end on one request per intent, and
    prints the best router per axis with its interval, which differences are significant and the
    cheapest router within the best one's interval. Any of --router, --dataset, --dataset-path,
    --split, --limit, --config, --scorer, --attempts, --faults, --deadline-s or --resume runs a
    plain comparison of what was asked for instead.

    Exit codes: 0 done; 1 a run FAILED (most of its examples crashed; they are stored); 2 bad
    input (a message names the file, record and field or the option; also a --resume with options
    that change the session, and a database that does not open or lacks its examples' tables);
    3 every run finished but some examples crashed (how many and why is printed); 75 the results
    store stayed locked by another process past $ROUTERLAB_STORE_WAIT_S (default 30 s): what
    finished is stored, and the printed command resumes the rest;
    124 the --deadline-s budget ran out before every example started;
    130 interrupted (Ctrl-C), 143 stopped by SIGTERM. Each of the last three prints the command
    that finishes the session.
    """
    from routerlab.config import load_run_config
    from routerlab.eval.compare import compare_runs, render
    from routerlab.eval.store import ResultsStore, StoreBusyError
    from routerlab.session import (
        SessionSpec,
        check_resume,
        parse_routers,
        recorded_session,
        resume_command,
        run_session,
    )
    from routerlab.signals import stop_signals

    picked = (router_names, dataset_name, dataset_path, split, limit, config_file, scorer_names, attempts, faults)
    if all(v is None for v in (*picked, deadline_s, resume)):
        from routerlab.main_job import run_main_job

        with stop_signals() as stopped:
            job = run_main_job(
                lm_spec=lm or "local",
                lm_api_base=lm_api_base,
                store=store,
                tracking_uri=None if no_mlflow else tracking_uri,
                console=_out,
                lm_cache=False if no_cache else None,
            )
        _end_session(job.session, stopped, store, tracking_uri, no_mlflow)
        return
    # a resumed session starts from what it recorded; options that would change it are refused
    recorded_routers, defaults = (
        recorded_session(store, resume) if resume else ([], _run_defaults(dataset_name, config_file))
    )
    recorded_config = dict(defaults)
    # a deadline budgets one invocation, not the session: the printed resume command must finish it
    defaults.pop("deadline_s", None)
    config = load_run_config(
        config_file,
        defaults=defaults,
        dataset=dataset_name,
        dataset_path=dataset_path,
        db_dir=db_dir,
        split=split,
        limit=limit,
        lm=lm,
        lm_api_base=lm_api_base,
        concurrency=concurrency,
        attempts=attempts,
        faults=faults,
        deadline_s=deadline_s,
        replay=replay or None,
        lm_cache=False if no_cache else None,
        scorers=_split_names(scorer_names),
    )
    names = router_names or ",".join(n for n, _ in recorded_routers) or DEFAULT_ROUTERS
    routers = parse_routers(names, router_arg or (), dict(recorded_routers))
    if resume:
        check_resume(resume, recorded_routers, recorded_config, routers, config)
    if not resume:
        _announce_size(config, len(routers))
    spec = SessionSpec(
        routers=routers,
        config=config,
        tracking_uri=None if no_mlflow else tracking_uri,
        store_path=store,
        skip_bad_databases=skip_bad_databases,
    )
    with stop_signals() as stopped:
        try:
            result = run_session(spec, console=_out, resume=resume)
        except StoreBusyError as exc:  # locked before the session began: nothing was written
            _err.print(f"[bold red]error:[/] {exc}\nnothing was written; run again once it is free", highlight=False)
            raise typer.Exit(STORE_BUSY_EXIT) from None
    if result.store_busy is not None:
        # the store is another process's now: no table (it cannot be read), the resume command
        _err.print(f"[bold red]error:[/] {result.store_busy}", highlight=False)
        again = resume_command(result.session_id, store, spec.tracking_uri)
        _err.print(
            f"stopped: the results store stayed locked; what finished is stored, the rest resumes with  {again}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(STORE_BUSY_EXIT)
    comparison = compare_runs(ResultsStore(store), result.run_ids)
    _out.print(render(comparison, "table"))
    from routerlab.eval.verdict import render_verdict
    from routerlab.main_job import e2e_verdicts

    if result.run_ids and not result.interrupted:
        run_verdicts = e2e_verdicts(ResultsStore(store, read_only=True), result.run_ids, [n for n, _ in routers])
        _out.print(render_verdict(run_verdicts), highlight=False, markup=False)
    _end_session(result, stopped, store, tracking_uri, no_mlflow)


def _end_session(result: Any, stopped: Any, store: str, tracking_uri: str, no_mlflow: bool) -> None:
    """Print the session id and, after an interruption, failure or deadline, the exit code and resume command."""
    mlflow_where = "off" if no_mlflow else tracking_uri
    _out.print(f"session id: [bold]{result.session_id}[/]  (store {store}; MLflow {mlflow_where})")
    where = "" if store == ".routerlab/results.duckdb" else f" --store {store}"
    where += " --no-mlflow" if no_mlflow else ""
    where += "" if no_mlflow or tracking_uri == "sqlite:///mlflow.db" else f" --tracking-uri {tracking_uri}"
    again = f"routerlab run --resume {result.session_id}{where}"
    if result.interrupted:
        _err.print(f"stopped by {stopped.name}; runs closed KILLED", highlight=False, markup=False)
        _err.print(f"interrupted: resume with  {again}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(stopped.exit_code)
    for run_id, why in result.failed.items():
        _err.print(
            f"run {run_id} FAILED: {why}. Its examples are stored, but its rates measure crashes, "
            "not the router: fix the cause and start a new session",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if result.failed:
        raise typer.Exit(1)
    for bad in result.bad_databases:
        _err.print(f"left out (not run, in no rate): {bad.line()}", highlight=False, markup=False, soft_wrap=True)
    for run_id, (n, ran, first) in result.crashed.items():
        _err.print(
            f"run {run_id}: {n} of {ran} examples crashed (first: {first}); they are stored as crashes and "
            "count as failures in its rates: fix the cause and rerun them in a new session",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if result.skipped:
        _err.print(
            f"deadline reached: {result.skipped} example(s) not started or cut off (stored as not run, left out "
            f"of every rate and paired test); run them with  {again}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(124)
    if result.crashed:
        raise typer.Exit(3)


def _deprecated(old: str, old_value: Any, new: str, new_value: Any) -> Any:
    """The value of an option given under its former name, with a note; the new name wins."""
    if old_value is None:
        return new_value
    _err.print(f"note: {old} is deprecated here; use {new}", highlight=False, markup=False)
    return new_value if new_value is not None else old_value


def _split_names(text: str | None) -> list[str] | None:
    """``a,b`` -> ``["a", "b"]``; None (not given) stays None."""
    return None if text is None else [n.strip() for n in text.split(",") if n.strip()]


def _announce_size(config: Any, n_routers: int) -> None:
    """Say how many examples a run has and, on the embedded model, about how long it will take.

    A named dataset is scored whole by default; a full Spider dev folder on a CPU model runs for
    hours, and the person who started it should know that before it starts, not after.
    """
    from routerlab.session import load_dataset, select

    n = len(select(load_dataset(config), config))
    line = f"{n} example(s) x {n_routers} router(s)"
    if str(config.lm).startswith("local"):
        minutes = n * n_routers * LOCAL_SECONDS_PER_EXAMPLE / 60
        line += (
            f"; on the embedded model about {minutes:.0f} min at ~{LOCAL_SECONDS_PER_EXAMPLE:.0f} s per example "
            "and router (2 cores; --limit N runs fewer)"
        )
    _out.print(line, highlight=False, soft_wrap=True)


@app.command("compare")
@_clean_errors
def compare_cmd(
    run_ids: Annotated[list[str], typer.Argument(help="Run ids (SESSION.ROUTER) or session ids.")],
    fmt: Annotated[str, typer.Option("--format", help="table, markdown, csv or json.")] = "table",
    store: Annotated[str, typer.Option("--store", help="DuckDB results store.")] = ".routerlab/results.duckdb",
    cost: Annotated[
        str,
        typer.Option(
            "--cost", help="Latency/token columns: cold (as first computed; default) or observed (this run paid)."
        ),
    ] = "cold",
    out_dir: Annotated[
        Path | None,
        typer.Option("--out-dir", help="With --format csv: write runs.csv and pairs.csv into this folder."),
    ] = None,
    out_old: Annotated[Path | None, typer.Option("--out", hidden=True, help="Deprecated name of --out-dir.")] = None,
) -> None:
    """Compare stored runs: rates with 95% CIs, latency, tokens, paired significance.

    --format csv prints the runs table (one header); --out-dir DIR writes it and the paired
    tests as two files (runs.csv, pairs.csv).
    """
    from routerlab.eval.compare import compare_runs, csv_tables, render
    from routerlab.eval.store import ResultsStore

    # compare only reads: a missing store is an error (never created), a read-only one opens
    rs = ResultsStore(store, read_only=True)
    known = rs.runs()["run_id"].tolist()
    expanded: list[str] = []
    for rid in run_ids:
        expanded += [rid] if rid in known else [k for k in known if k.startswith(f"{rid}.")] or [rid]
    comparison = compare_runs(rs, expanded, cost=cost)
    out = _deprecated("--out", out_old, "--out-dir", out_dir)
    if fmt == "csv":
        _write_csv(csv_tables(comparison), out)
    else:
        print(render(comparison, fmt))
    for note in _status_notes(rs, expanded):
        _err.print(note, highlight=False, markup=False, soft_wrap=True)


def _write_csv(tables: dict[str, str], out: Path | None) -> None:
    """One CSV per table: files in ``out``, or the runs table on stdout (a note says where pairs are)."""
    if out is None:
        print(tables["runs"], end="")
        if "pairs" in tables:
            _err.print(
                "paired tests are a second table: pass --out-dir DIR to write runs.csv and pairs.csv", markup=False
            )
        return
    out.mkdir(parents=True, exist_ok=True)
    for name, text in tables.items():
        (out / f"{name}.csv").write_text(text)
        _err.print(f"wrote {out / f'{name}.csv'}", markup=False, highlight=False)


def _status_notes(store: Any, run_ids: list[str]) -> list[str]:
    """One warning per compared run that did not finish: its figures are partial or not a result."""
    runs = store.runs()
    status = dict(zip(runs["run_id"], runs["status"], strict=True))
    notes = []
    for rid in run_ids:
        st = status.get(rid)
        session = rid.rsplit(".", 1)[0]
        if st in ("KILLED", "RUNNING"):
            how = "was interrupted or cut off" if st == "KILLED" else "is still running, or its process was killed"
            notes.append(
                f"note: run {rid} {how} ({st}): its figures cover only the examples it finished; "
                f"finish it with  routerlab run --resume {session}"
            )
        elif st == "FAILED":
            notes.append(
                f"note: run {rid} FAILED (an error stopped it, or most of its examples crashed): "
                "its figures are not a measure of the router"
            )
    return notes


@app.command("route")
@_clean_errors
def route_cmd(
    router_names: Annotated[str, typer.Option("--router", help="Comma-separated routers.")] = ROUTE_DEFAULT_ROUTERS,
    dataset_name: Annotated[str | None, typer.Option("--dataset", help="Dataset name. \\[default: builtin]")] = None,
    dataset_path: Annotated[str | None, typer.Option("--dataset-path", help="Dataset directory or file.")] = None,
    db_dir: DbDirOpt = None,
    split: Annotated[str | None, typer.Option("--split", help="train, dev, test or all. \\[default: dev]")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", help="At most N examples (stratified by intent); 0 = all. \\[default: 0]")
    ] = None,
    lm: Annotated[str | None, typer.Option("--lm", help=LM_HELP + " \\[default: local]")] = None,
    lm_api_base: ApiBaseOpt = None,
    router_arg: Annotated[list[str] | None, typer.Option("--router-arg", help="ROUTER.PARAM=VALUE.")] = None,
    config_file: RunConfigOpt = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write every first decision here as CSV.")] = None,
    history: Annotated[
        str,
        typer.Option(
            "--history",
            help="A conversation's earlier turns as the router sees them: gold (as the dataset has them) or "
            "predicted (the router's own earlier decisions).",
        ),
    ] = "gold",
    tracking_uri: Annotated[
        str, typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store.")
    ] = "sqlite:///mlflow.db",
    no_mlflow: Annotated[bool, typer.Option("--no-mlflow", help="Skip MLflow logging.")] = False,
) -> None:
    """Score only each router's first decision (intent accuracy, no sub-agent runs): cheap routing numbers.

    A turn of a conversation (sparc, cosql, builtin_conversations, jsonl/csv with conversation
    keys) is decided with the conversation's earlier turns as 'ask --conversation' holds them;
    the table then adds accuracy on first turns and on follow-ups (docs/conversations.md).

    Logged to MLflow like 'run': a parent run per invocation, a child run per router with its
    parameters, the printed figures as metrics and its decisions as decisions.csv
    (routerlab/route_tracking.py). Exit codes: 0 done; 2 bad input, checked before any decision
    (an unknown or mistyped router argument, a bad --history, an unusable --tracking-uri).
    """
    import contextlib

    import pandas as pd
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from routerlab import routers
    from routerlab.agents.errors import ConfigError
    from routerlab.agents.lm import resolve_lm
    from routerlab.config import load_run_config
    from routerlab.eval.tracking import check_tracking_store, resolve_tracking_uri
    from routerlab.route_eval import (
        HISTORIES,
        decisions_frame,
        diversion_line,
        first_decisions,
        intent_confusion,
        summary_table,
    )
    from routerlab.route_tracking import RouteTracking
    from routerlab.session import load_dataset, new_session_id, parse_routers, select

    config = load_run_config(
        config_file,
        dataset=dataset_name,
        dataset_path=dataset_path,
        db_dir=db_dir,
        split=split,
        limit=limit,
        lm=lm,
        lm_api_base=lm_api_base,
    )
    if history not in HISTORIES:
        # refused before the model loads
        raise ConfigError(
            f"invalid --history {history!r}",
            expected=f"one of {', '.join(HISTORIES)}",
            found=repr(history),
            fix="pass --history gold (the dataset's earlier turns) or --history predicted (the router's own)",
            details={"option": "--history"},
        )
    chosen = parse_routers(router_names, router_arg or ())
    # every router is built (its arguments checked) and the MLflow store checked before the model
    # loads: bad input exits 2 with nothing logged
    built = {name: routers.router.build(name, **args) for name, args in chosen}
    if not no_mlflow:
        check_tracking_store(resolve_tracking_uri(tracking_uri))
    dataset = load_dataset(config)
    examples = select(dataset, config)
    model = resolve_lm(config.lm, api_base=config.lm_api_base)
    settings = {
        "dataset": config.dataset,
        "dataset_args": config.dataset_args,
        "split": config.split,
        "limit": config.limit,
        "lm": config.lm,
        "history": history,
    }
    tracking = None if no_mlflow else RouteTracking(tracking_uri, new_session_id(), dataset, settings, list(built))
    by_router = {}
    columns = (TextColumn("[bold]{task.description:<18}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with (
        tracking if tracking is not None else contextlib.nullcontext(),
        Progress(*columns, console=_out, disable=not _out.is_terminal) as progress,
    ):
        for name, args in chosen:
            label = routers.label(name)
            task = progress.add_task(label, total=len(examples))

            def done(d: Any, task: Any = task, label: str = label) -> None:
                progress.advance(task)
                if not _out.is_terminal:  # a log gets one line per decision instead of a bar
                    n = int(progress.tasks[task].completed)
                    mark = "ok" if d.correct else f"wrong ({d.error or d.predicted})"
                    print(f"{label} {n}/{len(examples)} {d.example_id} {d.seconds:.1f}s {mark}", flush=True)

            if tracking is not None:
                tracking.start_router(name, built[name])
            by_router[label] = first_decisions(
                name, args, examples, model, on_done=done, history=history, router=built[name]
            )
            if tracking is not None:
                tracking.finish_router(name, label, by_router[label])
        table = summary_table(by_router)
        # plain print: rich would wrap these wide tables at 80 columns when stdout is not a terminal
        lines = [table.to_string(index=False, float_format=lambda v: f"{v:.2f}")]
        lines.append("\ndata questions sent away from SQL (diverted: chat, refuse, clarify or abstain), with 95% CI")
        lines += [f"  {label}: {diversion_line(decisions)}" for label, decisions in by_router.items()]
        if tracking is not None:
            tracking.finish(table, "```\n" + "\n".join(lines) + "\n```\n")
    if any(e.conversation for e in examples):
        convs = len({e.conversation for e in examples if e.conversation})
        print(
            f"{len(examples)} turns of {convs} conversations, each decided with its earlier turns ({history} "
            "history); CI: bootstrap over conversations; acc_first: turn 1, acc_followup: turns 2+"
        )
    print("\n".join(lines))
    for label, decisions in by_router.items():
        # the matrix counts raw predictions; recall above also accepts an example's alternates
        print(f"\n{label}: gold intent (rows) x first-decision intent (columns; recall_* also counts alternates)")
        print(intent_confusion(decisions).to_string())
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        pd.concat([decisions_frame(label, ds) for label, ds in by_router.items()]).to_csv(out, index=False)
        _out.print(f"first decisions written to {out}")
    if tracking is not None:
        _out.print(
            f"MLflow: route {tracking.route_id}, parent run {tracking.parent} (store {tracking.tracking_uri})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


@app.command("linking")
@_clean_errors
def linking_cmd(
    dataset_name: Annotated[str, typer.Option("--dataset", help="Dataset name.")] = "builtin",
    dataset_path: Annotated[str | None, typer.Option("--dataset-path", help="Dataset directory or file.")] = None,
    split: Annotated[str, typer.Option("--split", help="train, dev, test or all.")] = "dev",
    limit: Annotated[int, typer.Option("--limit", help="At most N examples (stratified by intent); 0 = all.")] = 0,
    modes: Annotated[str, typer.Option("--modes", help="Comma-separated linking modes.")] = "auto,full,overlap",
    config_file: Annotated[Path | None, typer.Option("--config", help="Run config (its pipeline.tools).")] = None,
) -> None:
    """Schema-linking recall: gold tables/columns (from the gold SQL, with sqlglot) inside the linked schema."""
    from routerlab.config import load_run_config
    from routerlab.linking_recall import link_examples, linking_table
    from routerlab.session import load_dataset, select

    config = load_run_config(
        config_file, dataset=dataset_name, dataset_path=dataset_path, split=split, limit=limit or None
    )
    examples = select(load_dataset(config), config)
    wanted = [m.strip() for m in modes.split(",") if m.strip()]
    settings = config.pipeline.tools
    for m in wanted:  # an unknown mode is refused before any database is opened
        dataclasses.replace(settings, linking=m)
    table = linking_table(link_examples(examples, settings, wanted))
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


@app.command("toolscale")
@_clean_errors
def toolscale_cmd(
    sizes: Annotated[
        str, typer.Option("--sizes", help="Toolset sizes: real sub-agents plus distractors.")
    ] = "9,64,512",
    router_names: Annotated[str, typer.Option("--router", help="Comma-separated routers.")] = "llm,retrieval",
    k: Annotated[int, typer.Option("--k", min=1, help="Tools one retrieval returns.")] = 5,
    index: Annotated[str, typer.Option("--index", help="Retrieval index: embedding or bm25.")] = "embedding",
    dataset_name: Annotated[str, typer.Option("--dataset", help="Dataset name.")] = "builtin",
    dataset_path: Annotated[str | None, typer.Option("--dataset-path", help="Dataset directory or file.")] = None,
    split: Annotated[str, typer.Option("--split", help="train, dev, test or all.")] = "dev",
    limit: Annotated[int, typer.Option("--limit", help="At most N examples (stratified by intent); 0 = all.")] = 6,
    lm: LMOpt = "local",
    lm_api_base: ApiBaseOpt = None,
    seed: Annotated[int, typer.Option("--seed", help="Picks and orders the distractor tools.")] = 0,
    max_tokens: Annotated[
        int | None, typer.Option("--max-tokens", min=1, help="Completion budget of a router call.")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Where the results go as JSON.")] = Path(
        ".routerlab/toolscale.json"
    ),
    plot: Annotated[Path | None, typer.Option("--plot", help="Also save the figure here (PNG).")] = None,
    tracking_uri: Annotated[
        str, typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store.")
    ] = "sqlite:///mlflow.db",
    no_mlflow: Annotated[bool, typer.Option("--no-mlflow", help="Skip MLflow logging.")] = False,
) -> None:
    """First-decision routing as the toolset grows: llm (all tools bound) vs retrieval (search, then bind)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from routerlab.agents.lm import resolve_lm
    from routerlab.config import load_run_config
    from routerlab.session import load_dataset, select
    from routerlab.toolscale import parse_sizes, run_toolscale

    size_list = parse_sizes(sizes)
    names = [n.strip() for n in router_names.split(",") if n.strip()]
    config = load_run_config(
        None, dataset=dataset_name, dataset_path=dataset_path, split=split, limit=limit or None, lm=lm
    )
    examples = select(load_dataset(config), config)
    model = resolve_lm(lm, api_base=lm_api_base)
    columns = (TextColumn("[bold]toolscale"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=_out) as progress:
        task = progress.add_task("toolscale", total=len(examples) * len(size_list) * len(names))
        result = run_toolscale(
            examples,
            model,
            sizes=size_list,
            routers=names,
            k=k,
            index=index,
            seed=seed,
            max_tokens=max_tokens,
            lm_spec=lm,
            tracking_uri=None if no_mlflow else tracking_uri,
            out=out,
            on_done=lambda _: progress.advance(task),
        )
    # plain print: rich would wrap the wide table at 80 columns when stdout is not a terminal
    print(result.table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    _out.print(f"results written to {out}  (MLflow {'off' if no_mlflow else tracking_uri})")
    if plot is not None:
        from routerlab.eval.toolscale_plots import plot_toolscale

        plot.parent.mkdir(parents=True, exist_ok=True)
        plot_toolscale(result.table).savefig(plot, dpi=120)
        _out.print(f"figure written to {plot}")


@app.command("optimize")
@_clean_errors
def optimize_cmd(
    router_name: Annotated[str, typer.Option("--router", help="Only 'dspy' has a program to compile.")] = "dspy",
    optimizer: Annotated[
        str,
        typer.Option(
            "--optimizer",
            help="bootstrap, random_search, mipro, gepa, stratified or calibrated (routerlab/optimizers.py).",
        ),
    ] = "bootstrap",
    optimizer_arg: Annotated[
        list[str] | None, typer.Option("--optimizer-arg", help="PARAM=VALUE of the optimizer, repeatable.")
    ] = None,
    dataset_name: Annotated[str, typer.Option("--dataset")] = "builtin",
    dataset_path: Annotated[str | None, typer.Option("--dataset-path")] = None,
    split: Annotated[
        str, typer.Option("--split", help="Split compiled on (dev is only scored, with --evaluate).")
    ] = "train",
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="Max bootstrapped demos (the optimizer's 'demos').")
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Fit / held-out division and fit order; the optimizer's seed.")
    ] = 0,
    heldout: Annotated[
        float, typer.Option("--heldout", min=0.0, max=0.9, help="Share of each intent's train examples held out.")
    ] = 1 / 3,
    safety: Annotated[
        float, typer.Option("--safety", min=0.1, help="Weight of clarify / refuse recall (docs/metrics.md section 9).")
    ] = 2.0,
    one_pass: Annotated[
        bool, typer.Option("--one-pass/--generation", help="Program calls read label probabilities, or generate.")
    ] = True,
    train_limit: Annotated[
        int | None, typer.Option("--train-limit", min=1, help="Use the first N train examples.")
    ] = None,
    schema: Annotated[
        str,
        typer.Option("--schema", help="What the program sees of a database: tables (names) or columns; saved in it."),
    ] = "tables",
    checks: Annotated[
        str,
        typer.Option(
            "--checks",
            help="Checks whose findings the program reads as evidence: schema, ambiguity, neighbours, rules.",
        ),
    ] = "",
    out: Annotated[
        Path | None, typer.Option("--out", help="Program file (default: the dataset's committed one).")
    ] = None,
    evaluate: Annotated[
        Path | None, typer.Option("--evaluate", help="Do not compile: score this saved program (see --on).")
    ] = None,
    on: Annotated[
        str, typer.Option("--on", help="With --evaluate: dev (once, the chosen program), heldout or fit.")
    ] = "dev",
    cache: Annotated[
        bool, typer.Option("--cache/--no-cache", help="DSPy's response cache for generated calls.")
    ] = True,
    zero_shot: Annotated[
        bool, typer.Option("--zero-shot/--no-zero-shot", help="Also score the uncompiled program on held-out.")
    ] = True,
    score_fit: Annotated[
        bool, typer.Option("--score-fit/--no-score-fit", help="Also score the compiled program on the fit part.")
    ] = True,
    lm: LMOpt = "local",
    lm_api_base: ApiBaseOpt = None,
    tracking_uri: Annotated[str, typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI")] = "sqlite:///mlflow.db",
) -> None:
    """Compile the dspy router's program on train (fit / held-out), or score a saved one (--evaluate)."""
    from dataclasses import asdict

    from routerlab.agents.errors import ConfigError
    from routerlab.agents.lm import resolve_lm
    from routerlab.config import load_run_config
    from routerlab.optimize import optimize_router, report_json, score_program
    from routerlab.session import load_dataset

    if router_name != "dspy" or split != "train":
        raise ConfigError(
            "only the dspy router is compiled, on the train split",
            expected="--router dspy --split train",
            found=f"--router {router_name} --split {split}",
            fix="drop the options or pass those values",
        )
    args: dict[str, object] = {}
    for item in optimizer_arg or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(
                f"bad --optimizer-arg {item!r}",
                expected="PARAM=VALUE",
                found=item,
                fix="e.g. --optimizer-arg candidates=8",
            )
        try:
            args[key] = json.loads(value)
        except json.JSONDecodeError:
            args[key] = value
    if budget is not None:
        args["demos"] = budget
    config = load_run_config(None, dataset=dataset_name, dataset_path=dataset_path, lm=lm, lm_api_base=lm_api_base)
    ds = load_dataset(config)
    if evaluate is None:
        from routerlab.optimizers import optimizer as optimizer_registry
        from routerlab.routers.support.schema_outline import check_view

        optimizer_registry.build(optimizer, **{"seed": seed, **args})  # bad settings exit 2 before the model loads
        check_view("dspy", schema)
    from routerlab.routers.dspy_router import check_checks

    check_list = check_checks(checks)
    model = resolve_lm(lm, api_base=lm_api_base, cache=cache)
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(f"routerlab/{ds.name}/optimize")
    if evaluate is not None:
        with mlflow.start_run(run_name=f"evaluate-dspy-{on}"):
            mlflow.log_params({"program": str(evaluate), "on": on, "lm": lm, "dataset": ds.name, "one_pass": one_pass})
            figures = score_program(evaluate, ds, model, on=on, one_pass=one_pass)
            mlflow.log_metrics(_figure_metrics(on, asdict(figures)))
        print(report_json(figures))
        return
    mlflow.dspy.autolog(log_compiles=True, log_evals=False, log_traces=False)
    with mlflow.start_run(run_name=f"optimize-dspy-{optimizer}"):
        report = optimize_router(
            ds,
            model,
            lm_spec=lm,
            optimizer=optimizer,
            optimizer_args=args,
            seed=seed,
            heldout_fraction=heldout,
            safety=safety,
            one_pass=one_pass,
            schema=schema,
            checks=check_list,
            train_limit=train_limit,
            out=out,
            zero_shot=zero_shot,
            score_fit=score_fit,
        )
        mlflow.log_params(
            {
                "optimizer": optimizer,
                **{f"optimizer.{k}": v for k, v in report.optimizer_args.items()},
                "seed": seed,
                "lm": lm,
                "dataset": ds.name,
                "one_pass": one_pass,
                "schema": schema,
                "checks": ",".join(check_list),
                **{f"calibration.{k}": round(v, 4) for k, v in report.calibration.items()},
                # the affine map's matrix is in the program and its .meta.json; its kind is a param
                **{k: v for k, v in report.optimizer_notes.items() if k in ("calibration_map", "instructions")},
                "heldout_fraction": report.heldout_fraction,
                "safety": safety,
                "fit_size": report.fit_size,
                "heldout_size": report.heldout_size,
                "program_file": report.program_file,
            }
        )
        metrics = {"compile_seconds": report.compile_seconds, "seconds": report.seconds, "demos": report.demos}
        metrics.update({k: float(v) for k, v in report.optimizer_notes.items() if isinstance(v, int | float)})
        for name in ("zero_shot_heldout", "fit", "heldout"):
            if getattr(report, name) is not None:
                metrics.update(_figure_metrics(name, asdict(getattr(report, name))))
        mlflow.log_metrics(metrics)
    print(report_json(report))


def _figure_metrics(prefix: str, figures: dict) -> dict[str, float]:
    """MLflow metrics of one set's figures: ``<prefix>_score``, ``_accuracy``, ``_recall_<intent>``, ``_seconds``."""
    out = {f"{prefix}_{k}": float(figures[k]) for k in ("score", "accuracy", "seconds")}
    out.update({f"{prefix}_recall_{k}": float(v) for k, v in figures["recall"].items()})
    if figures.get("uncalibrated"):  # a calibrated program's same calls before its offsets
        out.update(_figure_metrics(f"{prefix}_uncalibrated", {"seconds": 0.0, **figures["uncalibrated"]}))
        del out[f"{prefix}_uncalibrated_seconds"]
    return out


@app.command("ui")
def ui_cmd(
    tracking_uri: Annotated[
        str,
        typer.Option(
            "--tracking-uri",
            envvar="MLFLOW_TRACKING_URI",
            help="MLflow store to show: the one 'routerlab run' logged to (a sqlite:/// file or an http:// server).",
        ),
    ] = "sqlite:///mlflow.db",
    host: Annotated[str, typer.Option("--host", help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port of the UI (its URL is printed when it is up).")] = 5000,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="Server worker processes (one serves a person's browser).")
    ] = 1,
) -> None:
    """Start the MLflow UI on the same store, print its URL; Ctrl-C (or SIGTERM) stops its server too."""
    import os
    import signal
    import subprocess

    from routerlab.eval.tracking.artifacts import artifacts_folder
    from routerlab.sweep.mlflow_server import mlflow_command, mlflow_env

    # artifacts are stored relative to a SQLite store (mlflow-artifacts:/...): serve them from its
    # folder, wherever the store was copied to and whatever the working directory
    folder = artifacts_folder(tracking_uri)
    cmd = mlflow_command(
        "ui",
        backend_store_uri=tracking_uri,
        host=host,
        port=port,
        artifacts_destination=str(folder) if folder is not None else None,
        # MLflow's default is 4 uvicorn workers, each importing MLflow at start-up: on a 2-core
        # machine the UI answered after about 60 s instead of 20 s with one, which serves one
        # person's browser (its requests run on the worker's thread pool)
        workers=workers,
    )
    # its own process group: the UI's server workers are stopped with it, never left behind
    proc = subprocess.Popen(cmd, env=mlflow_env(), start_new_session=True)
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    _out.print(f"MLflow UI: http://{shown}:{port}  (store {tracking_uri}; Ctrl-C stops it)", highlight=False)

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        code = 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    raise typer.Exit(code)


@server_app.command("mlflow")
@_clean_errors
def server_mlflow_cmd(
    host: Annotated[
        str, typer.Option("--host", help="Bind address: loopback by default, 0.0.0.0 for the team's machines.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 5000,
    tracking_uri: Annotated[
        str,
        typer.Option("--tracking-uri", help="Database of runs: sqlite:///FILE or a SQLAlchemy URI (postgresql://...)."),
    ] = "sqlite:///mlflow.db",
    backend_store_uri: Annotated[
        str | None, typer.Option("--backend-store-uri", hidden=True, help="Deprecated name of --tracking-uri.")
    ] = None,
    artifacts_destination: Annotated[
        str | None,
        typer.Option(
            "--artifacts-destination",
            help="Artifact root the server stores uploads in (default: mlartifacts/ beside the database).",
        ),
    ] = None,
    workers: Annotated[int, typer.Option("--workers", min=1, help="Server worker processes.")] = 2,
    allowed_hosts: Annotated[
        str | None,
        typer.Option("--allowed-hosts", help="Host headers to accept besides localhost and private IPs (DNS names)."),
    ] = None,
) -> None:
    """Start an MLflow tracking server (database + served artifacts) for a team and print its URI."""
    from routerlab.sweep.mlflow_server import serve_mlflow

    def ready(url: str) -> None:
        _out.print(f"MLflow tracking server ready: {url}", highlight=False, soft_wrap=True)
        _out.print(
            f"  log to it with --tracking-uri {url}  (e.g. routerlab sweep --config sweep.yaml --executor ray "
            f"--tracking-uri {url})",
            highlight=False,
            soft_wrap=True,
        )

    raise typer.Exit(
        serve_mlflow(
            backend_store_uri=_deprecated("--backend-store-uri", backend_store_uri, "--tracking-uri", None)
            or tracking_uri,
            host=host,
            port=port,
            artifacts_destination=artifacts_destination,
            workers=workers,
            allowed_hosts=allowed_hosts,
            on_ready=ready,
        )
    )


@app.command("sweep")
@_clean_errors
def sweep_cmd(
    config_file: Annotated[
        Path | None, typer.Option("--config", help="Sweep file (YAML/JSON): datasets, routers, lms, seeds, run...")
    ] = None,
    executor: Annotated[str, typer.Option("--executor", help="local (cells in this process) or ray.")] = "local",
    address: Annotated[
        str | None,
        typer.Option(
            "--address", help="Ray cluster to join: auto, HOST:6379, ray://HOST:10001 (default: a local one)."
        ),
    ] = None,
    tracking_uri: Annotated[
        str,
        typer.Option(
            "--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store; a server (http://...) for ray."
        ),
    ] = "sqlite:///mlflow.db",
    no_mlflow: Annotated[bool, typer.Option("--no-mlflow", help="Skip MLflow logging.")] = False,
    store: Annotated[str, typer.Option("--store", help="DuckDB results store.")] = ".routerlab/results.duckdb",
    resume: Annotated[
        str | None, typer.Option("--resume", help="Finish an interrupted sweep by its id (its recorded grid).")
    ] = None,
) -> None:
    """Run a grid of datasets x routers x LMs x seeds (one run per cell), in this process or on Ray.

    Exit codes: 0 every cell finished; 1 a cell failed (the others ran; its error is printed);
    2 bad input (nothing ran); 130 interrupted. After 1 or 130 the command that finishes the sweep
    is printed.
    """
    from routerlab.agents.errors import ConfigError
    from routerlab.sweep import load_sweep, make_executor, recorded_sweep, run_sweep

    runner = make_executor(executor, address=address)
    if config_file is None and resume is None:
        raise ConfigError(
            "no sweep given",
            expected="--config sweep.yaml (a new sweep) or --resume SWEEP_ID",
            found="neither",
            fix="see the README's Sweeps section for the file format",
            details={"option": "--config"},
        )
    spec = load_sweep(config_file) if config_file is not None else recorded_sweep(store, resume or "")
    result = run_sweep(
        spec,
        executor=runner,
        store_path=store,
        tracking_uri=None if no_mlflow else tracking_uri,
        console=_out,
        resume=resume,
    )
    summary = result.summary.assign(error=result.summary["error"].str.slice(0, 80))
    # plain print: rich would wrap the wide table at 80 columns when stdout is not a terminal
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"), flush=True)
    for provider, st in result.slot_stats.items():
        _out.print(
            f"provider {provider}: cap {st['cap']}, at most {st['max_in_flight']} LM call(s) in flight, "
            f"{st['granted']} calls",
            highlight=False,
        )
    _out.print(
        f"sweep id: [bold]{result.sweep_id}[/] {result.status} in {result.wall_s:.1f} s  "
        f"(store {store}; MLflow {'off' if no_mlflow else tracking_uri}; compare: routerlab compare {result.sweep_id}"
        f"{'' if store == '.routerlab/results.duckdb' else f' --store {store}'})"
    )
    where = f" --executor {executor}" + (f" --address {address}" if address else "")
    where += "" if store == ".routerlab/results.duckdb" else f" --store {store}"
    where += " --no-mlflow" if no_mlflow else ""
    where += "" if no_mlflow or tracking_uri == "sqlite:///mlflow.db" else f" --tracking-uri {tracking_uri}"
    again = f"routerlab sweep --resume {result.sweep_id}{where}"
    if result.interrupted:
        _err.print(f"interrupted: resume with  {again}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(130)
    if result.status != "FINISHED":
        _err.print(
            f"sweep {result.status}: cells that did not finish rerun with  {again}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


@app.command("perf")
@_clean_errors
def perf_cmd(
    quick: Annotated[bool, typer.Option("--quick", help="Smaller sizes (CI runs this form).")] = False,
    model: Annotated[bool, typer.Option("--model/--no-model", help="Also time the embedded model.")] = False,
    lm: Annotated[str, typer.Option("--lm", help="LM spec for --model.")] = "local",
    databases: Annotated[
        Path | None,
        typer.Option(
            "--databases",
            help="Spider-layout folder whose databases the first-decision cost (cold vs warm) is measured on "
            "(default: generated schemas).",
        ),
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Where the figures go as JSON.")] = Path(".routerlab/perf.json"),
    tracking_uri: Annotated[
        str | None, typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store (none: skip).")
    ] = None,
) -> None:
    """Measure the harness, EX scoring, concurrency and (with --model) the embedded model."""
    from rich.table import Table

    from routerlab.perf import figures_json, run_perf

    if databases is not None:
        from routerlab.benchmarks.loaders.spider import load_spider

        load_spider(str(databases), limit=1)  # a wrong folder is said now, not after minutes of measuring
    figures = run_perf(quick=quick, model=model, lm=lm, databases=databases)
    table = Table("section", "figure", "value", "unit", "goal", "met", title="routerlab perf")
    for f in figures:
        met = "" if f.met is None else ("yes" if f.met else "NO")
        table.add_row(f.section, f.name, f"{f.value:g}", f.unit, f.goal, met)
    _out.print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(figures_json(figures))
    _out.print(f"figures written to {out}")
    if tracking_uri:
        import mlflow

        from routerlab.eval.tracking import metric_name

        mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_experiment("routerlab/perf")
        with mlflow.start_run(run_name="perf" + (" --quick" if quick else "")):
            mlflow.log_params({"quick": quick, "model": model, "lm": lm, "databases": str(databases or "")})
            for f in figures:
                mlflow.log_metric(metric_name(f"{f.section}.{f.name}"), float(f.value))
            mlflow.log_artifact(str(out))


@app.command("serve")
@_clean_errors
def serve_cmd(
    host: Annotated[str, typer.Option("--host", help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8084,
    router_name: Annotated[
        str, typer.Option("--router", help="Router of requests that name none (see `routerlab routers`).")
    ] = "rules",
    lm: LMOpt = "local",
    lm_api_base: ApiBaseOpt = None,
    db: Annotated[
        Path | None, typer.Option("--db", help="DuckDB or SQLite file (default: the built-in database).")
    ] = None,
    conversations: Annotated[
        Path | None,
        typer.Option("--conversations", help="SQLite file keeping conversations across restarts (default: memory)."),
    ] = None,
    shared_conversations: Annotated[
        bool,
        typer.Option(
            "--shared-conversations",
            help="Let any user_id continue any conversation (single-user use; by default a conversation "
            "belongs to the user who started it).",
        ),
    ] = False,
    register_file: Annotated[
        list[str] | None,
        typer.Option(
            "--register-file",
            help="KIND:NAME=PATH (kind program or exemplars): a file requests may name by NAME in "
            "router_args. Requests never give paths; they name committed or registered files only.",
        ),
    ] = None,
) -> None:
    """Serve the streaming API (/api/v0/ask_agent[_stream]) and the live progress page at /."""
    from routerlab.serve import ServeSettings, serve
    from routerlab.serve.files import parse_registrations

    settings = ServeSettings(
        host=host,
        port=port,
        router=router_name,
        lm_spec=lm,
        lm_api_base=lm_api_base,
        database=db,
        conversations=conversations,
        shared_conversations=shared_conversations,
        files=parse_registrations(register_file or []),
    )
    serve(settings, on_ready=lambda url: _out.print(f"routerlab serve: open {url}", highlight=False))


@app.command("report")
@_clean_errors
def report_cmd(
    session: Annotated[str, typer.Argument(help="Session id printed by `routerlab run`.")],
    out: Annotated[Path, typer.Option("--out", help="HTML file to write.")] = Path("report.html"),
    store: Annotated[str, typer.Option("--store", help="DuckDB results store.")] = ".routerlab/results.duckdb",
    tracking_uri: Annotated[
        str | None,
        typer.Option(
            "--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store. \\[default: sqlite:///mlflow.db]"
        ),
    ] = None,
    no_mlflow: Annotated[bool, typer.Option("--no-mlflow", help="Skip the MLflow cross-check.")] = False,
    with_code: Annotated[bool, typer.Option("--with-code", help="Keep the code cells in the page.")] = False,
) -> None:
    """Run the comparison notebook for a session and write one self-contained HTML report."""
    from routerlab.report import ReportCellError, make_report

    try:
        result = make_report(
            session,
            out,
            store=store,
            tracking_uri=tracking_uri,
            no_mlflow=no_mlflow,
            with_code=with_code,
            progress=lambda line: typer.echo(f"report: {line}", err=True),
        )
    except ReportCellError as exc:
        # the input was fine but the analysis broke: exit 1, not the bad-input code; a traceback's
        # brackets are text, not rich markup
        from rich.markup import escape

        _err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    _out.print(
        f"wrote {result.out} ({result.bytes / 1e6:.1f} MB, {result.images} figures, "
        f"{result.code_cells} cells) in {result.seconds:.1f} s",
        highlight=False,
    )


@app.command("routers")
def routers_cmd() -> None:
    """List the registered routers."""
    from routerlab import routers

    for name in routers.router.names():
        _out.print(routers.label(name))


def main() -> None:  # pragma: no cover - console entry for `python -m routerlab.cli`
    """Entry point."""
    app(prog_name="routerlab")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
