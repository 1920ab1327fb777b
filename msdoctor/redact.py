"""Redaction of a Report before it is rendered: home dir, user and host names, secrets in env vars and URLs.

Reports get pasted into issues and uploaded as CI artifacts, so every output
format is redacted by default (``--no-redact`` opts out). What is masked, and
why (flutter doctor and `transformers env` reports are pasted into public issues; docs/sources.md):

- the home directory becomes ``~`` (brew doctor does the same);
- the user name and the host name become ``<user>`` / ``<host>``, except
  generic account names (root, ubuntu, runner, ...) and names so short or so
  common that masking them would garble paths such as ``/dev`` or ``/opt``;
- the value of every environment variable whose name contains TOKEN, KEY,
  SECRET, PASSW or CREDENTIAL becomes ``<redacted>``, and so does that value
  wherever else it occurs in the report;
- credentials inside URLs (``https://user:pass@host/``, as in pip index URLs)
  and well-known token shapes (``hf_...``, ``ghp_...``, ``AKIA...``).

The vscode format keeps paths (``keep_paths``): its lines are read by the
editor on the same machine, which must open the files they name.
"""

from __future__ import annotations

import dataclasses
import enum
import getpass
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

from msdoctor.model import Report

MASK = "<redacted>"
USER_MASK = "<user>"
HOST_MASK = "<host>"

#: env var names whose values are secrets (DB_PASS, FTP_PWD as well as *PASSWORD*)
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSW|CREDENTIAL|(?:^|_)PASS$|(?:^|_)PWD$", re.IGNORECASE)
#: names that look secret but hold paths or flags (PYTHONDONTWRITEBYTECODE has no KEY; these do)
NOT_SECRET = frozenset({"SSH_AUTH_SOCK", "KEYTAB_PATH", "GPG_KEY_PATH", "PWD"})

#: generic accounts and hosts identify nobody, and masking them garbles paths
GENERIC_NAMES = frozenset(
    {
        "root",
        "admin",
        "administrator",
        "user",
        "users",
        "ubuntu",
        "debian",
        "centos",
        "fedora",
        "runner",
        "jovyan",
        "ma-user",
        "hwhiaiuser",
        "ec2-user",
        "ci",
        "build",
        "builder",
        "nobody",
        "localhost",
        "localhost.localdomain",
        "home",
        "opt",
        "usr",
        "dev",
        "data",
        "tmp",
        "var",
        "etc",
        "srv",
        "mnt",
        "work",
        "test",
        "lib",
        "bin",
        "python",
        "conda",
        "docker",
        "container",
    }
)
MIN_NAME = 3

# scheme://user[:password]@host  -> scheme://<redacted>@host
_URL_CREDS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s:@'\"<>]+(?::[^/\s@'\"<>]*)?)@")
# NAME=value inside free text, where NAME looks secret
_ASSIGN = re.compile(
    r"\b([A-Z0-9_]*(?:TOKEN|KEY|SECRET|PASSW|CREDENTIAL)[A-Z0-9_]*|[A-Z0-9_]+_(?:PASS|PWD))=([^\s'\"]+)"
)
# token shapes: Hugging Face, GitHub, AWS access key ids, GitLab personal tokens, OpenAI-style keys. Bounded by
# letters and digits only: a token joined by "_" or "-" inside a path or a name (/x/key_hf_Abc...) is masked too.
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9])(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{32,})(?![A-Za-z0-9])"
)

# Terminal control from outside text (a target's output, a kernel's display_name, a log line): CSI / OSC /
# other ESC sequences and every C0/C1 control character except tab and newline. Shown raw, they could clear
# the screen or retitle the terminal (ECMA-48).
_CONTROL = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|[ -/]*[0-~])?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def clean_text(s: str) -> str:
    """``s`` without terminal escape sequences and control characters (tabs and newlines kept)."""
    return _CONTROL.sub("", s) if s else s


#: a URL (scheme://...): never a path to join to a directory (that turns https:// into https:/)
URL_RE = re.compile(r"(?i)^[a-z][a-z0-9+.-]*://")


def mask_userinfo(s: str) -> str:
    """``scheme://user:password@host/...`` with the user information masked (whether or not redaction is on:
    a credential is never shown as a path)."""
    return _URL_CREDS.sub(lambda m: m.group(1) + MASK + "@", s) if s else s


# --password X, --api-key=X, -token X: a flag whose name says its value is a secret
_SECRET_FLAG = re.compile(r"(?i)^--?[a-z0-9_.-]*(?:token|key|secret|passw|credential|pwd|auth)[a-z0-9_.-]*$")


def command_line(argv: Sequence[str], limit: int = 300) -> str:
    """Another process's command line, safe to show: values of secret-looking flags, URL credentials,
    NAME=secret assignments and token shapes masked; escapes and control characters removed; one line."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        arg = str(arg)
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        flag, eq, _ = arg.partition("=")
        if _SECRET_FLAG.match(flag):
            out.append(flag + "=" + MASK if eq else arg)
            hide_next = not eq
            continue
        out.append(arg)
    text = _TOKENS.sub(MASK, _ASSIGN.sub(lambda m: m.group(1) + "=" + MASK, mask_userinfo(" ".join(out))))
    text = one_line(text)
    return text if len(text) <= limit else text[:limit] + " …"


def shown_value(s: str, environ: Optional[Mapping[str, str]] = None) -> str:
    """Text that echoes what a user or a file gave (an error message, a value read back), safe for a terminal
    and a CI log: terminal escapes and control characters removed, URL credentials, NAME=secret assignments,
    token shapes and the values of secret-named environment variables masked. Paths and names are kept: the
    message must name the file to fix."""
    if not s:
        return s
    s = clean_text(s)
    env = os.environ if environ is None else environ
    for key, value in env.items():
        if isinstance(value, str) and len(value) >= MIN_SECRET and value in s and is_secret_name(str(key)):
            s = s.replace(value, MASK)
    return _TOKENS.sub(MASK, _ASSIGN.sub(lambda m: m.group(1) + "=" + MASK, mask_userinfo(s)))


def one_line(s: str) -> str:
    """:func:`clean_text`, and newlines shown as ``\\n``: for line-based formats (vscode) and single-line fields."""
    return clean_text(s).replace("\n", "\\n").replace("\t", " ") if s else s


def sanitize(v: Any) -> Any:
    """Every string inside ``v`` (a Report, dataclasses, mappings, sequences) through :func:`clean_text`."""
    if isinstance(v, str):
        return clean_text(v)
    if isinstance(v, enum.Enum) or v is None or isinstance(v, (bool, int, float)):
        return v
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        changes = {}
        for f in dataclasses.fields(v):
            if f.init:
                old = getattr(v, f.name)
                new = sanitize(old)
                if new is not old and new != old:
                    changes[f.name] = new
        return dataclasses.replace(v, **changes) if changes else v
    if isinstance(v, Mapping):
        return {(clean_text(k) if isinstance(k, str) else k): sanitize(val) for k, val in v.items()}
    if isinstance(v, tuple):
        return tuple(sanitize(x) for x in v)
    if isinstance(v, list):
        return [sanitize(x) for x in v]
    return v


MIN_SECRET = 6  # shorter values ("1", "true") would mask unrelated text


def is_secret_name(name: str, *, env: bool = True) -> bool:
    """True for a variable whose value is a secret.

    Args:
        env: the name is known to be an environment variable (any case); otherwise
            only UPPER_CASE names count, so a package called ``tokenizers`` keeps its version.
    """
    if not env and not _ENV_NAME.fullmatch(name):
        return False
    return bool(SECRET_NAME.search(name)) and name.upper() not in NOT_SECRET


_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _usable_name(name: Optional[str]) -> bool:
    return name is not None and len(name) >= MIN_NAME and name.lower() not in GENERIC_NAMES


@dataclass(frozen=True)
class Redactor:
    """Masks identifying and secret strings; build one with :meth:`for_environment`."""

    home: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    keep_paths: bool = False

    @classmethod
    def for_environment(
        cls,
        environ: Mapping[str, str],
        *,
        more_environs: Iterable[Mapping[str, Any]] = (),
        keep_paths: bool = False,
        hosts: Optional[Iterable[str]] = None,
    ) -> "Redactor":
        """The redactor for this machine: home, user and host from ``environ`` (and the OS), secrets from every env given."""
        homes = []
        home = environ.get("HOME") or os.path.expanduser("~")
        if home and home not in ("/", "~"):
            homes.append(home.rstrip("/"))
            real = os.path.realpath(home)
            if real != home and real != "/":
                homes.append(real.rstrip("/"))
        users = set()
        for key in ("USER", "LOGNAME", "USERNAME"):
            if environ.get(key):
                users.add(environ[key])
        try:
            users.add(getpass.getuser())
        except (KeyError, OSError):  # no passwd entry in some containers
            pass
        if hosts is None:
            found = set()
            try:
                if hasattr(os, "uname"):  # POSIX: uname's nodename is gethostname(), without loading socket
                    name = os.uname().nodename
                else:  # pragma: no cover - Windows
                    import socket

                    name = socket.gethostname()
                found.update({name, name.split(".")[0]})
            except OSError:
                pass
            if environ.get("HOSTNAME"):
                found.add(environ["HOSTNAME"])
            hosts = found
        secrets = set()
        for env in [environ, *more_environs]:
            for key, value in env.items():
                if isinstance(value, str) and is_secret_name(str(key)) and len(value) >= MIN_SECRET:
                    secrets.add(value)
        return cls(
            home=tuple(sorted(homes, key=len, reverse=True)),
            users=tuple(sorted(u for u in users if _usable_name(u))),
            hosts=tuple(sorted((h for h in hosts if _usable_name(h)), key=len, reverse=True)),
            # longest first, so a secret that contains another is masked whole
            secrets=tuple(sorted(secrets, key=len, reverse=True)),
            keep_paths=keep_paths,
        )

    # -- strings ----------------------------------------------------------------
    def text(self, s: str) -> str:
        if not s:
            return s
        for secret in self.secrets:
            if secret in s:
                s = s.replace(secret, MASK)
        s = _URL_CREDS.sub(lambda m: m.group(1) + MASK + "@", s)
        s = _ASSIGN.sub(lambda m: m.group(1) + "=" + (m.group(2) if m.group(2) == MASK else MASK), s)
        s = _TOKENS.sub(MASK, s)
        if not self.keep_paths:
            for home in self.home:
                # a whole path only: not the tail of a longer one (/tmp/x/root is not the home /root)
                s = re.sub(r"(?<![\w.-])" + re.escape(home) + r"(?![\w.-])", "~", s)
            for user in self.users:
                s = re.sub(r"(?<![\w.-])" + re.escape(user) + r"(?![\w-])", USER_MASK, s)
        for host in self.hosts:
            s = re.sub(r"(?<![\w.-])" + re.escape(host) + r"(?![\w-])", HOST_MASK, s)
        return s

    def rules(self) -> list[tuple[str, str]]:
        """The substitutions :meth:`text` makes, as ``re.sub`` (pattern, replacement) pairs in order.

        For a process that cannot import msdoctor: the trainer masks its logs with these.
        """
        out = [(re.escape(secret), MASK) for secret in self.secrets]
        out += [(_URL_CREDS.pattern, r"\1" + MASK + "@"), (_ASSIGN.pattern, r"\1=" + MASK), (_TOKENS.pattern, MASK)]
        if not self.keep_paths:
            out += [(r"(?<![\w.-])" + re.escape(home) + r"(?![\w.-])", "~") for home in self.home]
            out += [(r"(?<![\w.-])" + re.escape(user) + r"(?![\w-])", USER_MASK) for user in self.users]
        out += [(r"(?<![\w.-])" + re.escape(host) + r"(?![\w-])", HOST_MASK) for host in self.hosts]
        return out

    # -- structures -------------------------------------------------------------
    def value(self, v: Any, key: Optional[str] = None) -> Any:
        """Redact strings anywhere inside v (dataclasses, mappings, sequences); secret-named keys lose their value."""
        if key is not None and is_secret_name(key, env=False) and isinstance(v, (str, bytes)) and v:
            return MASK
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, enum.Enum) or v is None or isinstance(v, (bool, int, float)):
            return v
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            changes = {}
            for f in dataclasses.fields(v):
                if not f.init:
                    continue
                old = getattr(v, f.name)
                new = self.value(old)
                if new is not old:
                    changes[f.name] = new
            return dataclasses.replace(v, **changes) if changes else v
        if isinstance(v, Mapping):
            return {(self.text(k) if isinstance(k, str) else k): self.value(val, str(k)) for k, val in v.items()}
        if isinstance(v, tuple):
            return tuple(self.value(x) for x in v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        return v

    def report(self, report: Report) -> Report:
        """A redacted copy of the report (the original is left as it was)."""
        return self.value(report)


def redact_report(report: Report, environ: Optional[Mapping[str, str]] = None, *, keep_paths: bool = False) -> Report:
    """Redact a report for this machine: secrets come from ``environ`` and from the target env in the report."""
    environ = dict(os.environ if environ is None else environ)
    more: list[Mapping[str, Any]] = []
    env = report.facts.get("env") if isinstance(report.facts, dict) else None
    if isinstance(env, Mapping):
        more.append(env)
    return Redactor.for_environment(environ, more_environs=more, keep_paths=keep_paths).report(report)
