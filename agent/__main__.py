import sys

from agent.main import main

sys.exit(main())
