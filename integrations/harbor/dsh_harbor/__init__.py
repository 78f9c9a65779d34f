"""Harbor adapter for dsh: run Terminal-Bench 2 (or any Harbor dataset) with dsh.

- :mod:`dsh_harbor.stream`: dsh's ``--json`` stream to Harbor's token counts and an ATIF
  trajectory (standard library only).
- :mod:`dsh_harbor.commands`: the install script and run command (standard library only).
- :mod:`dsh_harbor.agent`: the Harbor agent, ``dsh_harbor.agent:DshAgent`` (needs Harbor).
"""

__version__ = "0.1.0"
