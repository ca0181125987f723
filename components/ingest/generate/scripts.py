"""The dialogue scripts of the generated calls, in a small line language read by ``templates``.

The scripts are package data, ``scripts.txt`` beside this module, in this language:

* ``block: NAME`` starts one alternative of a reusable block; ``scenario: CONTEXT PURPOSE``
  starts a dialogue scenario; ``ending: OUTCOME`` starts one way the scenario above can end;
* ``summary: text`` and ``action: text`` give the label text of the scenario or ending above
  (a scenario's summary is followed by its ending's; action items come from the ending);
* ``role: text`` is a line said by the person in slot ``role`` (agent, cust, p1, mgr, ...);
  ``| text`` is another phrasing of the line above (one is drawn per conversation);
  ``?role: text`` or ``?@NAME`` is a line or block that is sometimes left out; ``@NAME`` is
  one alternative of block NAME.

In text, ``{slot}`` or ``{slot:form}`` marks a value. Personal information: a person
(``{cust}`` full name, ``{cust.first}``, ``{cust.last}``), an organization (``{org}``,
``{client}``, ``{vendor}``), something a person or organization owns (``{cust.email}``,
``{org.url}``), or a standalone item (``{ticket}``, ``{ip}``, ``{city}``). A trailing digit
makes a second item of a kind (``{cust.addr2}``). A ``FILL_VALUES`` name (``{amount}``) is
ordinary text. Forms: ``spell`` (letters spelled out), ``spoken`` (said aloud), ``plain``
(always written normally). Summaries and action items may only use ``FILL_VALUES`` slots.
"""

from __future__ import annotations

from importlib import resources

# pyproject.toml declares it as package data, so an installed veiltune generates the same
# corpus as a checkout.
SCRIPTS_FILE = "scripts.txt"
SCRIPTS = resources.files(__package__).joinpath(SCRIPTS_FILE).read_text(encoding="utf-8")
