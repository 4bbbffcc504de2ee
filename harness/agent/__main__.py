import sys

from harness.agent.main import main

sys.exit(main())
