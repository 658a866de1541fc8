"""The sweep stage: many predictions (tuning, what-if) into a results store.

spec.py (what to run) -> variants.py (platform/model what-ifs) -> plan.py (the runs, and
the invalid combinations) -> executors.py (local pool, Dask, Slurm via submitit) ->
store.py (SQLite, the only reader/writer) ; run.py ties them; show.py and plots.py read
the store; cli.py is ``hplsim sweep``. User documentation: docs/sweep.md.
"""
