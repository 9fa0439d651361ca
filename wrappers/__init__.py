"""Runners behind ``govern run``: slow-log governance around heavy jobs.

For people: ``govern.wrappers.runner.run(settings, argv, RunOptions(...))`` runs a job governed;
``govern.wrappers.session.exempt(conn)`` / ``@exempted`` keep a connection's own statements
out of the slow log. Nothing is imported here: ``govern run`` has to start fast.

Where things are:

* ``runner``   the steps of a run; ``cli`` the Click shells (run, status, recover, history)
* ``modes``    which mode, and why; ``session`` session mode (API, init command, MYSQL_HOME)
* ``variables`` the governed variables and their integer values
* ``claims``   overlapping runs as user-level locks carrying the value from before
* ``hold``     join, renew, rejoin, finish (compare-and-swap), repair
* ``lease``    the renewal thread; ``deadman`` the server-side event; ``watchdog`` the
  process that restores after ``kill -9``
* ``journal``  the state-store tables; ``recovery`` stale entries; ``blind`` connections
  opened during a window; ``job`` the job's process group, signals and terminal;
  ``status`` the JSON documents
"""
