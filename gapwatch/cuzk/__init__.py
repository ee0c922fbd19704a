"""cuzk, the pipelined Groth16 prover of Filecoin/Curio: everything gapwatch knows about it.

Who calls it: the log parser (`gapwatch.logs.parse`: cuzk's own line kinds), the status poller
(`gapwatch.sources.cuzk_status`: the `/status` schema), the simulator, the composition roots
(`gapwatch.engine.runtime`, `gapwatch.offline`) that hand the detector cuzk's pipeline facts,
the report, snapshots, `/metrics` and the dashboard (advice, the pipeline view).

What lives here, each read from curio's source (tests/data/cuzk-upstream, docs/cuzk-status.md):
- `pipeline`: cuzk's constants and formulas (partition budgets, synthesis worker count) and
  `PipelineFacts`, what its log says about its pipeline (workers, pool, pacer, SRS, PoSt);
- `causes`: where cuzk's own `/status` says a gap waited (the finer cause);
- `advice`: the cuzk setting for each stall, its evidence and payoff;
- `status`: the `GET /status` document's schema, read into `ProverStatus` records;
- `log_lines`: cuzk's own line kinds (TIMELINE, CUZK_TIMING, CUZK_NTT_H, lock attribution);
- `engine_runs`: its engine runs as TIMELINE offsets show them (they begin again at each
  restart), and the start line that places each run's lines read apart from it (its stderr
  given as a file of its own);
- `partitions`: each partition's run (synthesis, queue, GPU lock) from a recorded log;
- `settings`: the prover's settings as its startup lines and `/status` show them, and which
  changed between two runs (`gapwatch compare`);
- `paths`: the paths a/b/c and GPU jobs really take upstream (first wave, PoSt, batches, the
  pipeline off, the JobTracker mutex, env knobs, deprecated keys) and the advice on each;
- `watch` (with `post`, `gpu_queue`, `restarts`, `errors`, `panics`, `pool_churn`): the prover
  events (`gapwatch.core.models.ProverEvent`): PoSt latency against its deadline, a job cuzk's
  GPU queue lost, restarts and what they cost, failure lines and panics, the pinned pool
  churning before it fails (docs/post.md);
- `daemons`: which cuzk daemon each file's lines are of, where one gapwatch reads the logs of
  several on one box (a PoSt-only cuzk beside the PoRep one): one watcher a daemon.

The package sits above the core (it reads the core's records) and below the sources and the
log parser (they read cuzk's formats through it): pyproject's `[tool.importlinter]`.
"""
