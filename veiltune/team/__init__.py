"""``veiltune team``: the team deployment's servers started on one machine, for trying it
(docs/team.md)."""
