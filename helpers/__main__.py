import sys

from helpers.model.offline import main

sys.exit(main())
