import sys

from helpers.offline import main

sys.exit(main())
