"""The ``routerlab`` command line: options parsed, :mod:`routerlab.app` called, its results printed.

Each command is its options (declared once in :mod:`routerlab.cli_options`) and a few lines of
wiring; what a command does lives in the application layer (:mod:`routerlab.app`), which the
notebook and the Python API (``routerlab.run``...) call too, and the longer messages in
:mod:`routerlab.cli_output`. A command reaches its application module as an attribute of
:mod:`routerlab.app`, which loads it on first use, so ``routerlab --help`` loads no model, no
DuckDB and no MLflow.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from rich.markup import escape

from routerlab import app as application
from routerlab import cli_options as opt
from routerlab import cli_output as show
from routerlab.agents.errors import RouterlabError
from routerlab.app.defaults import DEFAULT_ROUTERS, DEFAULT_STORE_PATH, DEFAULT_TRACKING_URI
from routerlab.cli_output import CountBar, deprecated, perf_table, print_plain, split_names

# the consoles, under the names tests set their width through
_err = show.err
_out = show.out

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

F = TypeVar("F", bound=Callable[..., Any])


def _clean_errors(fn: F) -> F:
    """Turn routerlab errors into a clear message and exit code 2 (no traceback)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RouterlabError as exc:
            # user text and paths are printed literally: 'q[/b].jsonl' is a file name, not markup
            _err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def _table(frame: Any) -> str:
    # plain print: rich would wrap these wide tables at 80 columns when stdout is not a terminal
    return frame.to_string(index=False, float_format=lambda v: f"{v:.2f}")


@lm_app.command("check")
@_clean_errors
def lm_check_cmd(lm: opt.LMOpt = "local", lm_api_base: opt.ApiBaseOpt = None) -> None:
    """Load the LM, make one completion and one tool call, and print timings."""
    _out.print(application.measure.check_lm(lm, api_base=lm_api_base), highlight=False, markup=False)


@app.command("ask")
@_clean_errors
def ask_cmd(
    question: opt.QuestionArg,
    db: opt.DbOpt = None,
    router_name: opt.AskRouterOpt = "rules",
    lm: opt.LMOpt = "local",
    lm_api_base: opt.ApiBaseOpt = None,
    agent: opt.AgentOpt = None,
    reply: opt.ReplyOpt = None,
    conversation: opt.ConversationOpt = None,
    user: opt.UserOpt = None,
    shared_conversations: opt.AskSharedOpt = False,
) -> None:
    """Answer one request, printing the pipeline's progress events live."""
    raise typer.Exit(
        application.ask.ask(
            question, db, router_name, lm, lm_api_base, agent, reply, _out,
            conversation=conversation, user=user, shared_conversations=shared_conversations,
        )
    )  # fmt: skip


@app.command("run")
@_clean_errors
def run_cmd(
    router_names: opt.RunRoutersOpt = None,
    dataset_name: opt.RunDatasetOpt = None,
    dataset_path: opt.RunDatasetPathOpt = None,
    db_dir: opt.DbDirOpt = None,
    split: opt.SplitOrDevOpt = None,
    limit: opt.RunLimitOpt = None,
    lm: opt.RunLMOpt = None,
    lm_api_base: opt.ApiBaseOpt = None,
    concurrency: opt.ConcurrencyOpt = None,
    router_arg: opt.RunRouterArgOpt = None,
    config_file: opt.RunConfigOpt = None,
    scorer_names: opt.ScorersOpt = None,
    resume: opt.ResumeOpt = None,
    tracking_uri: opt.TrackingUriOpt = DEFAULT_TRACKING_URI,
    store: opt.StoreOpt = DEFAULT_STORE_PATH,
    no_mlflow: opt.NoMlflowOpt = False,
    attempts: opt.AttemptsOpt = None,
    faults: opt.FaultsOpt = None,
    deadline_s: opt.DeadlineOpt = None,
    no_cache: opt.NoCacheOpt = False,
    replay: opt.ReplayOpt = False,
    skip_bad_databases: opt.SkipBadDatabasesOpt = False,
) -> None:
    """Compare routers. Without --router, --config or --resume: the main job, ending with a verdict.

    The main job scores the first decision of the default routers on the built-in dev split (111
    requests), runs the same routers end to end on one request per intent, and prints the best
    router per axis with its interval, which differences are significant and the cheapest router
    within the best one's interval. --dataset, --split, --limit (the requests taken, as in
    'route'; end to end runs at most 5 of them), --lm and the other options keep that shape;
    --router, --config or --resume run a plain comparison of what was asked for instead.

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
    tracking = None if no_mlflow else tracking_uri
    settings = dict(
        dataset=dataset_name, dataset_path=dataset_path, db_dir=db_dir, split=split, limit=limit, lm=lm,
        lm_api_base=lm_api_base, concurrency=concurrency, attempts=attempts, faults=faults, deadline_s=deadline_s,
        replay=replay or None, lm_cache=False if no_cache else None, scorers=split_names(scorer_names),
    )  # fmt: skip
    if router_names is None and config_file is None and resume is None and not router_arg:
        show.end_main_job(
            application.main_job.main_job(store=store, tracking_uri=tracking, console=_out, settings=settings),
            store,
            tracking,
        )
        return
    runs = application.run
    spec = runs.plan_session(
        routers=router_names, router_args=router_arg or (), config_file=config_file, resume=resume, store=store,
        tracking_uri=tracking, skip_bad_databases=skip_bad_databases, **settings,
    )  # fmt: skip
    if not resume:
        _out.print(runs.size_line(spec), highlight=False, soft_wrap=True, markup=False)
    show.end_planned(runs.run_planned(spec, console=_out, resume=resume, on_summary=show.print_summary))


@app.command("compare")
@_clean_errors
def compare_cmd(
    run_ids: opt.RunIdsArg,
    fmt: opt.FormatOpt = "table",
    store: opt.StoreOpt = DEFAULT_STORE_PATH,
    out_dir: opt.OutDirOpt = None,
    out_old: opt.OldOutOpt = None,
) -> None:
    """Compare a session part by part: the verdict, rates with 95% CIs, paired tests, failures, disagreements.

    --format table (fits the terminal), markdown or json prints it; --format csv or parquet with
    --out-dir DIR writes every part's tables, one file each (csv alone prints the rates).
    """
    compared = application.compare
    model = compared.compare(run_ids, store=store)
    where = deprecated("--out", out_old, "--out-dir", out_dir)
    if fmt in ("csv", "parquet") and where is None:
        print(compared.rates_csv(model, fmt), end="")
        print_plain(_err, "every table of every part: pass --out-dir DIR")
    elif fmt in ("csv", "parquet"):
        for path in compared.export_compared(model, where, fmt):
            print_plain(_err, f"wrote {path}")
    else:
        print(compared.render_compared(model, fmt), end="")
    for note in model.notes:
        print_plain(_err, f"note: {note}")


@app.command("route")
@_clean_errors
def route_cmd(
    router_names: opt.RoutersOpt = DEFAULT_ROUTERS,
    dataset_name: opt.RouteDatasetOpt = None,
    dataset_path: opt.DatasetPathOpt = None,
    db_dir: opt.DbDirOpt = None,
    split: opt.SplitOrDevOpt = None,
    limit: opt.RouteLimitOpt = None,
    lm: opt.RouteLMOpt = None,
    lm_api_base: opt.ApiBaseOpt = None,
    router_arg: opt.RouteRouterArgOpt = None,
    config_file: opt.RunConfigOpt = None,
    out: opt.DecisionsOutOpt = None,
    history: opt.HistoryOpt = "gold",
    store: opt.StoreOpt = DEFAULT_STORE_PATH,
    tracking_uri: opt.TrackingUriOpt = DEFAULT_TRACKING_URI,
    no_mlflow: opt.NoMlflowOpt = False,
) -> None:
    """Score only each router's first decision (intent accuracy, no sub-agent runs): cheap routing numbers.

    A turn of a conversation (sparc, cosql, builtin_conversations, jsonl/csv with conversation
    keys) is decided with the conversation's earlier turns as 'ask --conversation' holds them;
    the table then adds accuracy on first turns and on follow-ups (docs/conversations.md).

    Stored as a session (--store), like 'run': 'routerlab compare <id>' gives McNemar tests,
    per-intent recall and the verdict; logged to MLflow as a parent run and a child run per router
    with its decisions.csv. Exit codes: 0 done; 2 bad input, checked before any decision.
    """
    outcome = application.route.route(
        router_names, router_args=router_arg or (), config_file=config_file, history=history,
        store=store, tracking_uri=None if no_mlflow else tracking_uri, progress=show.RouteBars(), dataset=dataset_name,
        dataset_path=dataset_path, db_dir=db_dir, split=split, limit=limit, lm=lm, lm_api_base=lm_api_base,
    )  # fmt: skip
    show.print_route(outcome, out)


@app.command("linking")
@_clean_errors
def linking_cmd(
    dataset_name: opt.NamedDatasetOpt = "builtin",
    dataset_path: opt.DatasetPathOpt = None,
    split: opt.SplitOpt = "dev",
    limit: opt.LimitAllOpt = 0,
    modes: opt.ModesOpt = "auto,full,overlap",
    config_file: opt.LinkingConfigOpt = None,
) -> None:
    """Schema-linking recall: gold tables/columns (from the gold SQL, with sqlglot) inside the linked schema."""
    table = application.measure.linking(
        dataset=dataset_name, dataset_path=dataset_path, split=split, limit=limit, modes=split_names(modes) or [],
        config_file=config_file,
    )  # fmt: skip
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))


@app.command("toolscale")
@_clean_errors
def toolscale_cmd(
    sizes: opt.SizesOpt = "9,64,512",
    router_names: opt.RoutersOpt = "llm,retrieval",
    k: opt.KOpt = 5,
    index: opt.IndexOpt = "embedding",
    dataset_name: opt.NamedDatasetOpt = "builtin",
    dataset_path: opt.DatasetPathOpt = None,
    split: opt.SplitOpt = "dev",
    limit: opt.LimitAllOpt = 6,
    lm: opt.LMOpt = "local",
    lm_api_base: opt.ApiBaseOpt = None,
    seed: opt.SeedToolsOpt = 0,
    max_tokens: opt.MaxTokensOpt = None,
    out: opt.ToolscaleOutOpt = Path(".routerlab/toolscale.json"),
    plot: opt.PlotOpt = None,
    tracking_uri: opt.TrackingUriOpt = DEFAULT_TRACKING_URI,
    no_mlflow: opt.NoMlflowOpt = False,
) -> None:
    """First-decision routing as the toolset grows: llm (all tools bound) vs retrieval (search, then bind)."""
    with CountBar("toolscale") as bar:
        result = application.measure.toolscale(
            sizes=sizes, routers=router_names, dataset=dataset_name, dataset_path=dataset_path, split=split,
            limit=limit, lm=lm, lm_api_base=lm_api_base, on_start=bar.start, k=k, index=index, seed=seed,
            max_tokens=max_tokens, tracking_uri=None if no_mlflow else tracking_uri, out=out, plot=plot,
        )  # fmt: skip
    print(_table(result.table))
    _out.print(f"results written to {out}  (MLflow {'off' if no_mlflow else tracking_uri})", markup=False)
    if plot is not None:
        _out.print(f"figure written to {plot}", markup=False)


@app.command("optimize")
@_clean_errors
def optimize_cmd(
    router_name: opt.OptimizeRouterOpt = "dspy",
    optimizer: opt.OptimizerOpt = "bootstrap",
    optimizer_arg: opt.OptimizerArgOpt = None,
    dataset_name: opt.BareDatasetOpt = "builtin",
    dataset_path: opt.BareDatasetPathOpt = None,
    split: opt.CompileSplitOpt = "train",
    budget: opt.BudgetOpt = None,
    seed: opt.SeedOpt = 0,
    heldout: opt.HeldoutOpt = 1 / 3,
    safety: opt.SafetyOpt = 2.0,
    one_pass: opt.OnePassOpt = True,
    train_limit: opt.TrainLimitOpt = None,
    schema: opt.SchemaOpt = "tables",
    checks: opt.ChecksOpt = "",
    out: opt.ProgramOutOpt = None,
    evaluate: opt.EvaluateOpt = None,
    on: opt.OnOpt = "dev",
    cache: opt.DspyCacheOpt = True,
    zero_shot: opt.ZeroShotOpt = True,
    score_fit: opt.ScoreFitOpt = True,
    lm: opt.LMOpt = "local",
    lm_api_base: opt.ApiBaseOpt = None,
    tracking_uri: opt.PlainTrackingUriOpt = DEFAULT_TRACKING_URI,
) -> None:
    """Compile the dspy router's program on train (fit / held-out), or score a saved one (--evaluate)."""
    fit = application.optimize
    fit.check_target(router_name, split)
    args = fit.parse_optimizer_args(optimizer_arg or [], budget)
    common: dict[str, Any] = {
        "dataset": dataset_name,
        "dataset_path": dataset_path,
        "checks": checks,
        "cache": cache,
        "lm": lm,
    }
    common |= {"lm_api_base": lm_api_base, "tracking_uri": tracking_uri}
    if evaluate is not None:
        print(fit.report_json(fit.evaluate_program(evaluate, on=on, one_pass=one_pass, **common)))
        return
    report = fit.optimize(
        optimizer=optimizer, optimizer_args=args, seed=seed, heldout_fraction=heldout, safety=safety,
        one_pass=one_pass, schema=schema, train_limit=train_limit, out=out, zero_shot=zero_shot,
        score_fit=score_fit, **common,
    )  # fmt: skip
    print(fit.report_json(report))


@app.command("ui")
def ui_cmd(
    tracking_uri: opt.PlainTrackingUriOpt = DEFAULT_TRACKING_URI,
    host: opt.HostOpt = "127.0.0.1",
    port: opt.PortOpt = 5000,
    workers: opt.UiWorkersOpt = 1,
) -> None:
    """Start the MLflow UI on the same store, print its URL; Ctrl-C (or SIGTERM) stops its server too."""
    ready = show.ui_ready(tracking_uri)
    raise typer.Exit(application.ui.run_mlflow_ui(tracking_uri, host=host, port=port, workers=workers, on_ready=ready))


@server_app.command("mlflow")
@_clean_errors
def server_mlflow_cmd(
    host: opt.ServerHostOpt = "127.0.0.1",
    port: opt.TcpPortOpt = 5000,
    tracking_uri: opt.ServerTrackingUriOpt = DEFAULT_TRACKING_URI,
    backend_store_uri: opt.BackendStoreUriOpt = None,
    artifacts_destination: opt.ArtifactsDestinationOpt = None,
    workers: opt.WorkersOpt = 2,
    allowed_hosts: opt.AllowedHostsOpt = None,
) -> None:
    """Start an MLflow tracking server (database + served artifacts) for a team and print its URI."""
    uri = deprecated("--backend-store-uri", backend_store_uri, "--tracking-uri", None) or tracking_uri
    raise typer.Exit(
        application.ui.serve_mlflow(
            backend_store_uri=uri, host=host, port=port, artifacts_destination=artifacts_destination,
            workers=workers, allowed_hosts=allowed_hosts, on_ready=show.mlflow_server_ready,
        )
    )  # fmt: skip


@app.command("sweep")
@_clean_errors
def sweep_cmd(
    config_file: opt.SweepConfigOpt = None,
    executor: opt.ExecutorOpt = "local",
    address: opt.AddressOpt = None,
    tracking_uri: opt.SweepTrackingUriOpt = DEFAULT_TRACKING_URI,
    no_mlflow: opt.NoMlflowOpt = False,
    store: opt.StoreOpt = DEFAULT_STORE_PATH,
    resume: opt.SweepResumeOpt = None,
) -> None:
    """Run a grid of datasets x routers x LMs x seeds (one run per cell), in this process or on Ray.

    Exit codes: 0 every cell finished; 1 a cell failed (the others ran; its error is printed);
    2 bad input (nothing ran); 130 interrupted. After 1 or 130 the command that finishes the sweep
    is printed.
    """
    tracking = None if no_mlflow else tracking_uri
    result = application.sweep.sweep(
        config_file, resume=resume, executor=executor, address=address, store=store, tracking_uri=tracking,
        console=_out,
    )  # fmt: skip
    again = application.sweep.again(
        result.sweep_id, store=store, tracking_uri=tracking, executor=executor, address=address
    )
    show.end_sweep(result, store, tracking, again)


@app.command("perf")
@_clean_errors
def perf_cmd(
    quick: opt.QuickOpt = False,
    model: opt.ModelOpt = False,
    lm: opt.PerfLMOpt = "local",
    databases: opt.DatabasesOpt = None,
    out: opt.PerfOutOpt = Path(".routerlab/perf.json"),
    tracking_uri: opt.OptionalTrackingUriOpt = None,
    no_mlflow: opt.NoMlflowOpt = False,
    section: opt.PerfSectionOpt = None,
) -> None:
    """Measure the harness, EX scoring, concurrency and (with --model) the embedded model."""
    tracking = None if no_mlflow else tracking_uri
    figures = application.measure.perf(
        quick=quick, model=model, lm=lm, databases=databases, out=out, tracking_uri=tracking, sections=section or ""
    )
    _out.print(perf_table(figures))
    _out.print(f"figures written to {out}", markup=False)


@app.command("serve")
@_clean_errors
def serve_cmd(
    host: opt.HostOpt = "127.0.0.1",
    port: opt.TcpPortOpt = 8084,
    router_name: opt.ServeRouterOpt = "rules",
    lm: opt.LMOpt = "local",
    lm_api_base: opt.ApiBaseOpt = None,
    db: opt.DbOpt = None,
    conversations: opt.ConversationsOpt = None,
    shared_conversations: opt.SharedConversationsOpt = False,
    register_file: opt.RegisterFileOpt = None,
) -> None:
    """Serve the streaming API (/api/v0/ask_agent[_stream]) and the live progress page at /."""
    application.serve.serve(
        host=host, port=port, router=router_name, lm=lm, lm_api_base=lm_api_base, database=db,
        conversations=conversations, shared_conversations=shared_conversations, register_files=register_file or [],
        on_ready=lambda url: _out.print(f"routerlab serve: open {url}", highlight=False),
    )  # fmt: skip


@app.command("report")
@_clean_errors
def report_cmd(
    session: opt.SessionArg,
    out: opt.ReportOutOpt = Path("report.html"),
    store: opt.StoreOpt = DEFAULT_STORE_PATH,
    tracking_uri: opt.ReportTrackingUriOpt = None,
    no_mlflow: opt.ReportNoMlflowOpt = False,
    with_code: opt.WithCodeOpt = False,
) -> None:
    """Run the comparison notebook for a session and write one self-contained HTML report."""
    report = application.report
    try:
        result = report.make_report(
            session, out, store=store, tracking_uri=tracking_uri, no_mlflow=no_mlflow, with_code=with_code,
            progress=lambda line: typer.echo(f"report: {line}", err=True),
        )  # fmt: skip
    except report.ReportCellError as exc:
        # the input was fine but the analysis broke: exit 1, not the bad-input code; a traceback's
        # brackets are text, not rich markup
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
    for line in application.route.router_labels():
        _out.print(line)


def main() -> None:  # pragma: no cover - console entry for `python -m routerlab.cli`
    """Entry point."""
    app(prog_name="routerlab")


if __name__ == "__main__":  # pragma: no cover
    main()
