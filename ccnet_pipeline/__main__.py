import sys

from ccnet_pipeline.cli import main

sys.exit(main())
