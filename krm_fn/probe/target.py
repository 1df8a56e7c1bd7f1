"""What one probe request is: URL, body and headers for each supported API (pure).

| --api | URL (from --url BASE) | body |
|---|---|---|
| `openai-completions` | `BASE/v1/completions` | `{"model", "prompt", "max_tokens", "temperature": 0}` |
| `openai-chat` | `BASE/v1/chat/completions` | `{"model", "messages": [{"role": "user", "content"}], "max_tokens", "temperature": 0}` |
| `kserve-v1` | `BASE/v1/models/MODEL:predict` | --body FILE: a JSON object with `instances` (or `inputs`) |
| `kserve-v2` | `BASE/v2/models/MODEL/infer` | --body FILE: a JSON object with an `inputs` list |
| `http` | --url as given | --body FILE, sent as is |

BASE may carry a path and a query string: the API's path is appended to its path and the
query kept. A 2xx response counts only when its body has the API's shape (RESPONSE: a
non-empty `choices` list of entries with `text` / `message`, `predictions`, `outputs`);
`shown(url)` is the URL with its credentials (user, password, query values) masked, as every
report and saved result gives it.

Sources: OpenAI API reference (https://platform.openai.com/docs/api-reference/completions,
https://platform.openai.com/docs/api-reference/chat), KServe V1 protocol
(https://kserve.github.io/website/docs/concepts/architecture/data-plane/v1-protocol), Open
Inference Protocol (https://github.com/kserve/open-inference-protocol/blob/main/specification/protocol/inference_rest.md).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

APIS = ("openai-completions", "openai-chat", "kserve-v1", "kserve-v2", "http")
MAX_BODY = 64 << 20          # bytes: a body file larger than this is refused


class TargetError(ValueError):
    """A target the probe cannot send: the message names the option and the value."""


@dataclass(frozen=True)
class Target:
    """`api` one of APIS; `url` the full request URL; `body` bytes POSTed; `headers`
    ((name, value), ...)."""

    api: str
    url: str
    body: bytes
    headers: tuple


def _base(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise TargetError(f"--url {shown(url)!r} is not an http:// or https:// URL with a "
                          f"host")
    return url


def _join(base: str, path: str) -> str:
    """`path` (starting with /) appended to the path of URL `base`, its query kept and its
    fragment dropped: http://h/x/?k=v + /v1/completions -> http://h/x/v1/completions?k=v."""
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + path,
                       parts.query, ""))


def shown(url: str) -> str:
    """`url` as reports and saved results show it: the user and password of the URL and the
    value of every query parameter replaced by `***` (a token in `?api_key=` is a
    credential too); everything else as given."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an URL that cannot be parsed>"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        query = urlencode([(k, "***") for k, _ in parse_qsl(query, keep_blank_values=True)],
                          safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


# Each API's response, as its specification gives it: the key of a non-empty list of the
# JSON object a 2xx response must hold (None: any body), and what each entry must carry.
RESPONSE = {
    "openai-completions": ("choices", "text"),
    "openai-chat": ("choices", "message"),
    "kserve-v1": ("predictions", None),
    "kserve-v2": ("outputs", None),
    "http": None,
}


def check_body(api: str, body: bytes) -> str | None:
    """None when `body` (a 2xx response) has the shape of `api`'s response (RESPONSE),
    else the error kind the probe counts, e.g. `unexpected body (no "choices")`: an
    auth proxy's login page or an error page served with 200 is not a served request."""
    want = RESPONSE.get(api)
    if want is None:
        return None
    key, entry = want
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "unexpected body (not JSON)"
    items = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(items, list) or not items:
        return f'unexpected body (no "{key}")'
    if entry and not all(isinstance(i, dict) and entry in i for i in items):
        return f'unexpected body ({key} without "{entry}")'
    return None


def _json_body(body: bytes | None, api: str, key: str) -> bytes:
    if body is None:
        raise TargetError(f"--api {api} needs --body FILE: a JSON request with {key!r} "
                          f"(the model's inputs)")
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise TargetError(f"--body is not JSON ({e}); --api {api} sends a JSON request") from None
    keys = (key, "inputs") if key == "instances" else (key,)
    if not isinstance(doc, dict) or not any(isinstance(doc.get(k), list) for k in keys):
        raise TargetError(f"--body for --api {api} must be a JSON object with a list "
                          f"{' or '.join(repr(k) for k in keys)}")
    return body


def build(api: str, url: str, model: str | None = None, prompt: str = "Hello",
          max_tokens: int = 16, body: bytes | None = None,
          headers: tuple = ()) -> Target:
    """The Target for `api` at `url` (the server's base URL; the full URL for `http`).
    `model` is required for the OpenAI and KServe APIs; `body` (bytes of --body FILE)
    replaces the generated OpenAI body and is required for kserve-v1/v2 and http.
    `headers`: extra ((name, value), ...). Raises TargetError naming the option."""
    if api not in APIS:
        raise TargetError(f"--api {api!r} is not one of {', '.join(APIS)}")
    base = _base(url)
    if api != "http" and not model:
        raise TargetError(f"--api {api} needs --model NAME")
    hdrs = [("Content-Type", "application/json")]
    if api == "openai-completions":
        url_out = _join(base, "/v1/completions")
        doc = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    elif api == "openai-chat":
        url_out = _join(base, "/v1/chat/completions")
        doc = {"model": model, "messages": [{"role": "user", "content": prompt}],
               "max_tokens": max_tokens, "temperature": 0}
    elif api == "kserve-v1":
        url_out = _join(base, f"/v1/models/{quote(model, safe='')}:predict")
        body = _json_body(body, api, "instances")
    elif api == "kserve-v2":
        url_out = _join(base, f"/v2/models/{quote(model, safe='')}/infer")
        body = _json_body(body, api, "inputs")
    else:
        url_out = url
        if body is None:
            raise TargetError("--api http needs --body FILE (sent as the POST body)")
        hdrs = []
    if api.startswith("openai") and body is None:
        body = json.dumps(doc, separators=(",", ":")).encode()
    names = {n.lower() for n, _ in headers}
    hdrs = [h for h in hdrs if h[0].lower() not in names] + list(headers)
    return Target(api, url_out, body, tuple(hdrs))


def parse_header(text: str) -> tuple[str, str]:
    """`Name: value` -> (name, value). Raises TargetError for text without a colon or a
    name with characters HTTP does not allow (RFC 9110 token)."""
    name, sep, value = text.partition(":")
    name = name.strip()
    ok = name and all(c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in name)
    if not sep or not ok or "\n" in value or "\r" in value:
        raise TargetError(f"--header {text!r} is not `Name: value`")
    return name, value.strip()
