"""evalshift.yaml, tool files, ``tools sync`` and ``init``: the settings of every stage."""
