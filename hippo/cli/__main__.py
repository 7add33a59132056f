"""``python -m hippo.cli``: the ``hippo`` command."""

from hippo.cli.main import app

app()
