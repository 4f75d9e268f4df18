import os
import sys

# Import the package from this source tree (python/sagejit) unless it is installed on purpose.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
