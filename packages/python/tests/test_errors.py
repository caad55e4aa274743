"""Bad input gets what a Python programmer expects: a typed exception that
names mnemo's code, without a stack of HTTP internals."""

from __future__ import annotations

import pickle
import traceback

import pytest

import pymnemo
from pymnemo import Memory

from .conftest import KEYWORDS


def test_invalid_input_is_a_value_error(mem):
    with pytest.raises(pymnemo.InvalidInputError) as e:
        mem.search("tea", max_results=0)
    err = e.value
    assert isinstance(err, pymnemo.MnemoError) and isinstance(err, ValueError)
    assert (err.code, err.status) == ("invalid_input", 400)
    assert "max_results" in err.message
    assert str(err).startswith("invalid_input: ")


def test_forbidden_path(mem):
    with pytest.raises(pymnemo.ForbiddenError) as e:
        mem.get("../outside.md")
    assert (e.value.code, e.value.status) == ("forbidden", 403)


def test_not_found_is_a_lookup_error(mem):
    with pytest.raises(LookupError):
        mem.history("nothing-recorded")


def test_no_http_internals_in_the_trace(mem):
    try:
        mem.forget("no-such-memory")
    except pymnemo.NotFoundError as e:
        assert e.__cause__ is None
        assert e.__context__ is None or e.__suppress_context__
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    else:
        pytest.fail("no error")
    assert "http.client" not in text and "json" not in text.lower().split("notfounderror")[0]
    assert text.strip().splitlines()[-1].startswith("pymnemo.errors.NotFoundError: not_found: no typed memory")


def test_connection_refused_says_where(tmp_path):
    m = Memory(url="http://127.0.0.1:9")
    with pytest.raises(pymnemo.ConnectionFailedError) as e:
        m.health()
    err = e.value
    assert isinstance(err, ConnectionError) and err.code == "connection" and err.status is None
    assert "127.0.0.1:9" in err.message
    assert err.__cause__ is None and err.__suppress_context__
    m.close()


def test_wrong_token_says_so(workspace):
    # A server with a token (the client starts it and knows the token).
    with Memory(workspace=workspace, settings=KEYWORDS, token="right-token") as owner:
        assert owner.sessions() == {"sessions": []}
        with pytest.raises(pymnemo.UnauthorizedError) as e:
            Memory(url=owner.url, token="wrong-token").sessions()
        assert (e.value.code, e.value.status) == ("unauthorized", 401)
        assert "token" in e.value.message
        assert isinstance(e.value, PermissionError)
        with pytest.raises(pymnemo.UnauthorizedError, match="missing bearer token"):
            Memory(url=owner.url).sessions()
        # The token from the environment, as the server reads it.
        import os

        os.environ["MNEMO_TOKEN"] = "right-token"
        try:
            assert Memory(url=owner.url).sessions() == {"sessions": []}
        finally:
            del os.environ["MNEMO_TOKEN"]


def test_server_that_cannot_start_says_why(workspace):
    workspace.mkdir(parents=True)
    (workspace / "mnemo.toml").write_text("[search\nbroken")
    with pytest.raises(pymnemo.ServerStartError) as e:
        Memory(workspace=workspace, settings=KEYWORDS)
    err = e.value
    assert err.code == "config" and err.exit_status == 7
    assert "mnemo.toml is not valid TOML" in err.message
    assert "mnemo.toml" in err.stderr
    assert err.__cause__ is None


def test_unsafe_address_is_refused_before_serving(workspace):
    # A workspace path that is a file: the server says so and exits.
    workspace.parent.mkdir(parents=True, exist_ok=True)
    workspace.write_text("not a folder")
    with pytest.raises(pymnemo.ServerStartError) as e:
        Memory(workspace=workspace, settings=KEYWORDS)
    assert "Not a directory" in e.value.message


def test_missing_binary_is_named(workspace, monkeypatch):
    monkeypatch.setenv("MNEMO_BIN", str(workspace / "no-such-mnemo"))
    with pytest.raises(FileNotFoundError, match="MNEMO_BIN"):
        Memory(workspace=workspace)
    with pytest.raises(FileNotFoundError, match="binary="):
        Memory(workspace=workspace, binary=workspace / "nope")


def test_unknown_code_still_a_mnemo_error():
    from pymnemo.errors import from_response

    e = from_response(418, b'{"error": {"code": "teapot", "message": "short and stout"}}')
    assert type(e) is pymnemo.MnemoError and e.code == "teapot" and e.status == 418
    p = from_response(502, b"<html>Bad gateway</html>")
    assert isinstance(p, pymnemo.ProviderError) and "Bad gateway" in p.message
    t = from_response(413, b'{"error": {"code": "too_large", "message": "over 8 MiB"}}')
    assert isinstance(t, pymnemo.TooLargeError)


def test_errors_pickle(mem):
    with pytest.raises(pymnemo.NotFoundError) as e:
        mem.forget("nope")
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is pymnemo.NotFoundError
    assert (back.code, back.status, back.message) == (e.value.code, e.value.status, e.value.message)


def test_too_large_body(mem):
    with pytest.raises(pymnemo.TooLargeError) as e:
        mem.append("big", [{"role": "user", "content": "x" * (9 * 1024 * 1024)}])
    assert (e.value.code, e.value.status) == ("too_large", 413)
