"""python -m pipelines.imagecode.sample imagecode OUT_DIR (make.py)."""
import sys

from pipelines.imagecode.sample.make import main

sys.exit(main())
