"""Settings every test package shares.

Hypothesis gives each example 200 ms by default and fails a test whose example
took longer as "flaky". These tests check what is computed, not how fast: on a
loaded machine (CI with a browser beside it, two test workers) one example of
the codec's property test took 369 ms and failed the run. Speed is measured by
``make bench``, not here.
"""

from hypothesis import settings

settings.register_profile("scorpion", deadline=None)
settings.load_profile("scorpion")
