"""minidb's autograder: grade lab submissions in a sandbox, write Gradescope's results.json.

Commands (``python -m autograder --help``): ``grade`` a submission, ``package`` an assignment
for Gradescope, ``release`` the student version of the project. The pieces:

* ``markers``: solution blocks in the reference code, and the stubs that replace them;
* ``release``: the student release; ``package``: the Gradescope bundle;
* ``sandbox`` and ``_child``: submissions run in child processes, with limits, as another user;
* ``grading``: assignments, parts and cases, and the loop that writes ``results.json`` once;
* ``results``: Gradescope's results format;
* ``assignments/``: one package per assignment (``lab1``), its cases, harness, hidden cases and
  reference submission.
"""
