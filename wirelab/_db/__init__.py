"""The results database (``docs/results.md``), one module per job: :mod:`~wirelab._db.schema` (the
tables, their columns declared once, migrations, opening a database), :mod:`~wirelab._db.writer`
(:class:`Store`), :mod:`~wirelab._db.reader` (:class:`Results`, what :func:`wirelab.open` returns) and
:mod:`~wirelab._db.files` (the items' directories beside the database and their modes).
:mod:`wirelab.store` re-exports the names users and the CLI import."""
