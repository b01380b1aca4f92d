"""Hello world of the bare package (installed from the sdist): a decision."""

import celguard

with celguard.Client() as client:
    session = client.session(agent=celguard.Agent(name="hello"))
    session.start_turn()
    d = session.before("write_marker", {"path": "/srv/blocked/x", "content": "hi"}, call_id="c1")
    assert (d.verdict, d.code) == ("block", "blocked_path"), d
    print("ok", celguard.__version__, celguard.__file__)
