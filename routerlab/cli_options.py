"""The ``routerlab`` command line's options: each declared once, with its help, for :mod:`routerlab.cli`.

Kept apart so a command in :mod:`routerlab.cli` reads as its parameters and a few lines of
wiring. Defaults shown in help come from :mod:`routerlab.app.defaults`, the one place they live.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from routerlab.app.defaults import DEFAULT_LIMIT, DEFAULT_ROUTERS, DEFAULT_TRACKING_URI

LM_HELP = "LM spec: local, local:0.5b, local:/path.gguf, or a LiteLLM model string such as openai/gpt-4o-mini."

# shared by several commands
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
TrackingUriOpt = Annotated[str, typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store.")]
PlainTrackingUriOpt = Annotated[
    str,
    typer.Option(
        "--tracking-uri",
        envvar="MLFLOW_TRACKING_URI",
        help="MLflow store: the one 'routerlab run' logged to (a sqlite:/// file or an http:// server).",
    ),
]
NoMlflowOpt = Annotated[bool, typer.Option("--no-mlflow", help="Skip MLflow logging.")]
StoreOpt = Annotated[str, typer.Option("--store", help="DuckDB results store.")]
RoutersOpt = Annotated[str, typer.Option("--router", help="Comma-separated routers.")]
NamedDatasetOpt = Annotated[str, typer.Option("--dataset", help="Dataset name.")]
DatasetPathOpt = Annotated[str | None, typer.Option("--dataset-path", help="Dataset directory or file.")]
SplitOpt = Annotated[str, typer.Option("--split", help="train, dev, test or all.")]
SplitOrDevOpt = Annotated[str | None, typer.Option("--split", help="train, dev, test or all. \\[default: dev]")]
LimitAllOpt = Annotated[int, typer.Option("--limit", help="At most N examples (stratified by intent); 0 = all.")]
HostOpt = Annotated[str, typer.Option("--host", help="Bind address (loopback by default).")]
DbOpt = Annotated[Path | None, typer.Option("--db", help="DuckDB or SQLite file (default: the built-in database).")]
SharedConversationsOpt = Annotated[
    bool,
    typer.Option(
        "--shared-conversations",
        help="Let any user_id continue any conversation (single-user use; by default a conversation "
        "belongs to the user who started it).",
    ),
]

# ask
QuestionArg = Annotated[str, typer.Argument(help="The request, e.g. 'How many areas have EV charging?'")]
AskRouterOpt = Annotated[str, typer.Option("--router", help="Router name (see `routerlab routers`).")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Call this agent directly (e.g. fix_sql).")]
ReplyOpt = Annotated[str | None, typer.Option("--reply", help="Answer to a clarifying question, if asked.")]
ConversationOpt = Annotated[
    str | None,
    typer.Option(
        "--conversation",
        help="Continue this conversation (its earlier turns are context: 'and in 2023?' follows up); "
        "without it a new one starts and its id is printed.",
    ),
]
UserOpt = Annotated[
    str | None,
    typer.Option("--user", help="Who asks (the API's user_id): a conversation belongs to its first user."),
]
AskSharedOpt = Annotated[
    bool,
    typer.Option("--shared-conversations", help="Let any --user continue any conversation (single-user use)."),
]

# run
RunRoutersOpt = Annotated[
    str | None, typer.Option("--router", help=f"Comma-separated routers to compare. \\[default: {DEFAULT_ROUTERS}]")
]
RunDatasetOpt = Annotated[
    str | None, typer.Option("--dataset", help="Dataset name (builtin, spider, bird, ...). \\[default: builtin]")
]
RunDatasetPathOpt = Annotated[
    str | None, typer.Option("--dataset-path", help="Dataset directory or file (on-disk formats).")
]
RunLimitOpt = Annotated[
    int | None,
    typer.Option(
        "--limit",
        help=f"At most N examples (stratified by intent); 0 = all. \\[default: {DEFAULT_LIMIT} for the "
        "built-in benchmark, all for other datasets]",
    ),
]
RunLMOpt = Annotated[
    str | None,
    typer.Option(
        "--lm",
        help="LM spec: local, local:0.5b, local:/path.gguf, a LiteLLM model string such as "
        "openai/gpt-4o-mini, or scripted:NAME (a deterministic test double for tests/CI). \\[default: local]",
    ),
]
ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        "--concurrency", min=1, help="Worker threads (the local model serialises their calls). \\[default: 1]"
    ),
]
RunRouterArgOpt = Annotated[list[str] | None, typer.Option("--router-arg", help="ROUTER.PARAM=VALUE, repeatable.")]
ScorersOpt = Annotated[
    str | None,
    typer.Option(
        "--scorer",
        help="Comma-separated scorers (registered names, your own included; see docs/extending.md). "
        "\\[default: ex,chain_valid,trajectory,chain_f1,route,success,abstain]",
    ),
]
ResumeOpt = Annotated[
    str | None,
    typer.Option("--resume", help="Finish an interrupted session by its id (with its recorded routers and settings)."),
]
AttemptsOpt = Annotated[int | None, typer.Option("--attempts", min=1, help="Runs per example (pass^k). \\[default: 1]")]
FaultsOpt = Annotated[
    str | None,
    typer.Option(
        "--faults",
        help="Inject faults: rate=0.2,seed=7[,kinds=lm_error+timeout+rate_limit+invalid_tool_call+empty"
        "+slow_sql+db_error] (reliability testing; recorded in the run's params).",
    ),
]
DeadlineOpt = Annotated[
    float | None,
    typer.Option(
        "--deadline-s",
        help="Wall-clock budget of the whole run; examples not started in time are recorded as "
        "timeouts (error class run_deadline) and rerun by --resume.",
    ),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Turn the LM response cache off for this run: every LM call is computed (observed cost = cold "
        "cost). Config field: lm_cache: false.",
    ),
]
ReplayOpt = Annotated[
    bool,
    typer.Option(
        "--replay",
        help="Reuse sub-agent outcomes stored by earlier --replay runs (same request, arguments, database "
        "and LM) and store new ones: a second router pays only for its own decisions and new calls.",
    ),
]
SkipBadDatabasesOpt = Annotated[
    bool,
    typer.Option(
        "--skip-bad-databases",
        help="Leave out (as not run) the examples of a database that does not open or lacks their "
        "tables, instead of refusing the run.",
    ),
]

# compare
RunIdsArg = Annotated[list[str], typer.Argument(help="Run ids (SESSION.ROUTER) or session ids.")]
FormatOpt = Annotated[str, typer.Option("--format", help="table, markdown, json, csv or parquet.")]
OutDirOpt = Annotated[
    Path | None,
    typer.Option("--out-dir", help="With --format csv or parquet: write every part's tables into this folder."),
]
OldOutOpt = Annotated[Path | None, typer.Option("--out", hidden=True, help="Deprecated name of --out-dir.")]

# route
RouteDatasetOpt = Annotated[str | None, typer.Option("--dataset", help="Dataset name. \\[default: builtin]")]
RouteLimitOpt = Annotated[
    int | None, typer.Option("--limit", help="At most N examples (stratified by intent); 0 = all. \\[default: 0]")
]
RouteLMOpt = Annotated[str | None, typer.Option("--lm", help=LM_HELP + " \\[default: local]")]
RouteRouterArgOpt = Annotated[list[str] | None, typer.Option("--router-arg", help="ROUTER.PARAM=VALUE.")]
DecisionsOutOpt = Annotated[Path | None, typer.Option("--out", help="Write every first decision here as CSV.")]
HistoryOpt = Annotated[
    str,
    typer.Option(
        "--history",
        help="A conversation's earlier turns as the router sees them: gold (as the dataset has them) or "
        "predicted (the router's own earlier decisions).",
    ),
]

# linking
ModesOpt = Annotated[str, typer.Option("--modes", help="Comma-separated linking modes.")]
LinkingConfigOpt = Annotated[Path | None, typer.Option("--config", help="Run config (its pipeline.tools).")]

# toolscale
SizesOpt = Annotated[str, typer.Option("--sizes", help="Toolset sizes: real sub-agents plus distractors.")]
KOpt = Annotated[int, typer.Option("--k", min=1, help="Tools one retrieval returns.")]
IndexOpt = Annotated[str, typer.Option("--index", help="Retrieval index: embedding or bm25.")]
SeedToolsOpt = Annotated[int, typer.Option("--seed", help="Picks and orders the distractor tools.")]
MaxTokensOpt = Annotated[int | None, typer.Option("--max-tokens", min=1, help="Completion budget of a router call.")]
ToolscaleOutOpt = Annotated[Path, typer.Option("--out", help="Where the results go as JSON.")]
PlotOpt = Annotated[Path | None, typer.Option("--plot", help="Also save the figure here (PNG).")]

# optimize
OptimizeRouterOpt = Annotated[str, typer.Option("--router", help="Only 'dspy' has a program to compile.")]
OptimizerOpt = Annotated[
    str,
    typer.Option(
        "--optimizer",
        help="bootstrap, random_search, mipro, gepa, stratified or calibrated (routerlab/fit/optimizers.py).",
    ),
]
OptimizerArgOpt = Annotated[
    list[str] | None, typer.Option("--optimizer-arg", help="PARAM=VALUE of the optimizer, repeatable.")
]
BareDatasetOpt = Annotated[str, typer.Option("--dataset")]
BareDatasetPathOpt = Annotated[str | None, typer.Option("--dataset-path")]
CompileSplitOpt = Annotated[
    str, typer.Option("--split", help="Split compiled on (dev is only scored, with --evaluate).")
]
BudgetOpt = Annotated[
    int | None, typer.Option("--budget", min=1, help="Max bootstrapped demos (the optimizer's 'demos').")
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Fit / held-out division and fit order; the optimizer's seed.")]
HeldoutOpt = Annotated[
    float, typer.Option("--heldout", min=0.0, max=0.9, help="Share of each intent's train examples held out.")
]
SafetyOpt = Annotated[
    float, typer.Option("--safety", min=0.1, help="Weight of clarify / refuse recall (docs/metrics.md section 9).")
]
OnePassOpt = Annotated[
    bool, typer.Option("--one-pass/--generation", help="Program calls read label probabilities, or generate.")
]
TrainLimitOpt = Annotated[int | None, typer.Option("--train-limit", min=1, help="Use the first N train examples.")]
SchemaOpt = Annotated[
    str,
    typer.Option("--schema", help="What the program sees of a database: tables (names) or columns; saved in it."),
]
ChecksOpt = Annotated[
    str,
    typer.Option(
        "--checks",
        help="Checks whose findings the program reads as evidence: schema, ambiguity, neighbours, rules.",
    ),
]
ProgramOutOpt = Annotated[
    Path | None, typer.Option("--out", help="Program file (default: the dataset's committed one).")
]
EvaluateOpt = Annotated[
    Path | None, typer.Option("--evaluate", help="Do not compile: score this saved program (see --on).")
]
OnOpt = Annotated[str, typer.Option("--on", help="With --evaluate: dev (once, the chosen program), heldout or fit.")]
DspyCacheOpt = Annotated[bool, typer.Option("--cache/--no-cache", help="DSPy's response cache for generated calls.")]
ZeroShotOpt = Annotated[
    bool, typer.Option("--zero-shot/--no-zero-shot", help="Also score the uncompiled program on held-out.")
]
ScoreFitOpt = Annotated[
    bool, typer.Option("--score-fit/--no-score-fit", help="Also score the compiled program on the fit part.")
]

# ui and server mlflow
PortOpt = Annotated[int, typer.Option("--port", help="Port of the UI (its URL is printed when it is up).")]
UiWorkersOpt = Annotated[
    int, typer.Option("--workers", min=1, help="Server worker processes (one serves a person's browser).")
]
ServerHostOpt = Annotated[
    str, typer.Option("--host", help="Bind address: loopback by default, 0.0.0.0 for the team's machines.")
]
TcpPortOpt = Annotated[int, typer.Option("--port", help="TCP port.")]
ServerTrackingUriOpt = Annotated[
    str,
    typer.Option("--tracking-uri", help="Database of runs: sqlite:///FILE or a SQLAlchemy URI (postgresql://...)."),
]
BackendStoreUriOpt = Annotated[
    str | None, typer.Option("--backend-store-uri", hidden=True, help="Deprecated name of --tracking-uri.")
]
ArtifactsDestinationOpt = Annotated[
    str | None,
    typer.Option(
        "--artifacts-destination",
        help="Artifact root the server stores uploads in (default: mlartifacts/ beside the database).",
    ),
]
WorkersOpt = Annotated[int, typer.Option("--workers", min=1, help="Server worker processes.")]
AllowedHostsOpt = Annotated[
    str | None,
    typer.Option("--allowed-hosts", help="Host headers to accept besides localhost and private IPs (DNS names)."),
]

# sweep
SweepConfigOpt = Annotated[
    Path | None, typer.Option("--config", help="Sweep file (YAML/JSON): datasets, routers, lms, seeds, run...")
]
ExecutorOpt = Annotated[str, typer.Option("--executor", help="local (cells in this process) or ray.")]
AddressOpt = Annotated[
    str | None,
    typer.Option("--address", help="Ray cluster to join: auto, HOST:6379, ray://HOST:10001 (default: a local one)."),
]
SweepTrackingUriOpt = Annotated[
    str,
    typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store; a server (http://...) for ray."),
]
SweepResumeOpt = Annotated[
    str | None, typer.Option("--resume", help="Finish an interrupted sweep by its id (its recorded grid).")
]

# perf
QuickOpt = Annotated[bool, typer.Option("--quick", help="Smaller sizes (CI runs this form).")]
ModelOpt = Annotated[bool, typer.Option("--model/--no-model", help="Also time the embedded model.")]
PerfLMOpt = Annotated[str, typer.Option("--lm", help="LM spec for --model.")]
DatabasesOpt = Annotated[
    Path | None,
    typer.Option(
        "--databases",
        help="Spider-layout folder whose databases the first-decision cost (cold vs warm) is measured on "
        "(default: generated schemas); turns per hour takes SParC and CoSQL conversations from the "
        "sparc*/cosql* folders beside it (default: the built-in conversations).",
    ),
]
PerfOutOpt = Annotated[Path, typer.Option("--out", help="Where the figures go as JSON.")]
PerfSectionOpt = Annotated[
    str | None,
    typer.Option(
        "--section",
        help="Only these sections, comma-separated (e.g. 'sql candidates'; model sections included); "
        "default: all (model sections with --model).",
    ),
]
OptionalTrackingUriOpt = Annotated[
    str | None,
    typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", help="MLflow store (not given: not logged)."),
]

# serve
ServeRouterOpt = Annotated[
    str, typer.Option("--router", help="Router of requests that name none (see `routerlab routers`).")
]
ConversationsOpt = Annotated[
    Path | None,
    typer.Option("--conversations", help="SQLite file keeping conversations across restarts (default: memory)."),
]
RegisterFileOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--register-file",
        help="KIND:NAME=PATH (kind program or exemplars): a file requests may name by NAME in "
        "router_args. Requests never give paths; they name committed or registered files only.",
    ),
]

# report
SessionArg = Annotated[str, typer.Argument(help="Session id printed by `routerlab run`.")]
ReportOutOpt = Annotated[Path, typer.Option("--out", help="HTML file to write.")]
ReportTrackingUriOpt = Annotated[
    str | None,
    typer.Option(
        "--tracking-uri", envvar="MLFLOW_TRACKING_URI", help=f"MLflow store. \\[default: {DEFAULT_TRACKING_URI}]"
    ),
]
ReportNoMlflowOpt = Annotated[bool, typer.Option("--no-mlflow", help="Skip the MLflow cross-check.")]
WithCodeOpt = Annotated[bool, typer.Option("--with-code", help="Keep the code cells in the page.")]

__all__ = sorted(["LM_HELP", *(name for name in dir() if name.endswith(("Opt", "Arg")))])
