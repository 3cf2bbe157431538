"""The reproductions of scripts/reproduce.py, one module per paper.

Each module has `reproduce(remat, args)`: it asks `remat` (a
rematbench.client.Remat) every question it needs and returns the Markdown
report as a list of lines; scripts/reproduce.py writes it and the solves
log. `args` carries the command line (quick, shared, milp_seconds). What
they share (bisection, formatting, the report's header) is in common.py.
"""
from . import (checkmate2020, chen2016, dtr2021, kumar2019, kusumoto2019,
               offload2016, rotor2019)

# In the order `all` runs them.
PAPERS = {"kusumoto2019": kusumoto2019.reproduce,
          "kumar2019": kumar2019.reproduce,
          "checkmate2020": checkmate2020.reproduce,
          "chen2016": chen2016.reproduce,
          "dtr2021": dtr2021.reproduce,
          "rotor2019": rotor2019.reproduce,
          "offload2016": offload2016.reproduce}
