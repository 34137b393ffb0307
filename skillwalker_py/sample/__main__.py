"""``python -m skillwalker_py.sample OUTPUT_DIR [options]``: runs :func:`.cli.main`."""

from skillwalker_py.sample.cli import main

raise SystemExit(main())
