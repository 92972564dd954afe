"""The trial spec's models, generated from ``schemas/trial-spec.schema.json`` by
``python -m wirelab._codegen``. Do not edit: change the schema and regenerate.

``TrialSpecFields`` are the fields an experiment's ``[base]`` shares with the trial spec;
``TrialSpecOwnFields`` the trial spec's own (``contract``, ``trial_id``, ``page``, ``network``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["CONTRACT_MODELS", "TrialSpecFields", "TrialSpecOwnFields"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)


class ApacheConfig(_Model):
    """Apache httpd's own knobs, applied when server.impl is apache (0 = the Debian package's default for the chosen MPM)"""

    mpm: Literal["event", "worker", "prefork"] = Field('event', description='multi-processing module')
    start_servers: int = Field(0, ge=0, le=1000, description="StartServers; 0 = the package's default (event, worker: 2; prefork: 5)")
    server_limit: int = Field(0, ge=0, le=20000, description="ServerLimit; 0 = Apache's default (event, worker: 16; prefork: 256)")
    threads_per_child: int = Field(0, ge=0, le=1000, description="ThreadsPerChild (event, worker); 0 = the package's default (25)")
    thread_limit: int = Field(0, ge=0, le=20000, description="ThreadLimit (event, worker); 0 = the package's default (64), raised to threads_per_child when that is larger")
    max_request_workers: int = Field(0, ge=0, le=100000, description="MaxRequestWorkers; 0 = the package's default (150)")
    min_spare_threads: int = Field(0, ge=0, le=100000, description="MinSpareThreads (event, worker); 0 = the package's default (25)")
    max_spare_threads: int = Field(0, ge=0, le=100000, description="MaxSpareThreads (event, worker); 0 = the package's default (75)")
    min_spare_servers: int = Field(0, ge=0, le=10000, description="MinSpareServers (prefork); 0 = the package's default (5)")
    max_spare_servers: int = Field(0, ge=0, le=10000, description="MaxSpareServers (prefork); 0 = the package's default (10)")
    max_connections_per_child: int = Field(0, ge=0, le=100000000, description="MaxConnectionsPerChild; 0 = unlimited (the package's default)")
    h2_min_workers: int = Field(0, ge=0, le=10000, description="H2MinWorkers: mod_http2's threads per child for HTTP/2 streams; 0 = mod_http2's default")
    h2_max_workers: int = Field(0, ge=0, le=10000, description="H2MaxWorkers; 0 = mod_http2's default")


class NginxConfig(_Model):
    """nginx's own knobs, applied when server.impl is nginx"""

    worker_processes: int = Field(0, ge=0, le=1024, description="worker_processes; 0 = auto (one per CPU, the package's default)")
    worker_connections: int = Field(768, ge=1, le=1000000, description="worker_connections per worker (the package's default: 768)")
    keepalive_requests: int = Field(1000, ge=1, le=1000000000, description="keepalive_requests: requests served over one connection, HTTP/1.1 or HTTP/2, before nginx closes it (HTTP/2: GOAWAY); nginx's default 1000")
    keepalive_timeout_s: int = Field(75, ge=1, le=86400, description="keepalive_timeout in seconds when keep_alive is on: how long an idle connection stays open, HTTP/1.1 or HTTP/2 (nginx's default 75)")
    open_file_cache: int = Field(0, ge=0, le=1000000, description="open_file_cache max=N: each worker keeps up to N served files open with their sizes, not opened, fstat-ed and closed per request (nginx's defaults: re-checked every open_file_cache_valid, 60 s; closed when not used for inactive, 60 s); 0 = off (nginx's default)")
    reuseport: bool = Field(False, description="listen … reuseport: a listening socket per worker, the kernel spreading new connections over the workers by their addresses and ports (nginx's default: off, one socket the workers take turns at)")


class H2OConfig(_Model):
    """h2o's own knobs, applied when server.impl is h2o"""

    num_threads: int = Field(0, ge=0, le=1024, description="num-threads; 0 = one per CPU (h2o's default)")


class CaddyConfig(_Model):
    """Caddy's own knobs, applied when server.impl is caddy"""

    gomaxprocs: int = Field(0, ge=0, le=1024, description="GOMAXPROCS of the Caddy process; 0 = one per CPU (Go's default)")


class ServerConfig(_Model):
    """the origin server under test and its knobs (docs/server.md); the table of server.impl's name applies when that implementation is chosen and is left out of the resolved spec otherwise; a common knob the implementation cannot set (its table's x-cannot-set) defaults to the value that stands for its own behaviour, the only one it accepts"""

    impl: Literal["builtin", "apache", "nginx", "h2o", "caddy"] = Field('builtin', description="the origin server implementation under test (docs/server.md): wirelab's own, or Apache httpd, nginx, h2o or Caddy from Debian's packages")
    max_concurrent_streams: int = Field(100, ge=0, le=1000, description="h2/h3 SETTINGS_MAX_CONCURRENT_STREAMS / QUIC max streams; 0 = the implementation's own default")
    write_chunk_bytes: int = Field(0, ge=0, le=1048576, description="cap on each DATA frame / write; 0 = the implementation's own behaviour")
    tls_version: Literal["1.2", "1.3"] = Field('1.3', description='the only TLS version h1s/h2 accept (h3 is always 1.3)')
    session_resumption: bool = Field(False, description='allow TLS session tickets / 0-RTT between loads')
    keep_alive: bool = Field(True, description='HTTP/1.x persistent connections')
    push: str = Field('none', pattern='^(none|all|embedding-level|dependency-level:([1-9][0-9]{0,2}|1000))$', description='server push policy with the root document (h2, h2c, spdy3)')
    config: str | None = Field(None, min_length=1, description='your own configuration file for server.impl, a template whose placeholders name the addresses, ports, certificates and document root; absent = wirelab generates one from the knobs')
    apache: ApacheConfig | None = Field(None, description="Apache httpd's own knobs, applied when server.impl is apache (0 = the Debian package's default for the chosen MPM)")
    nginx: NginxConfig | None = Field(None, description="nginx's own knobs, applied when server.impl is nginx")
    h2o: H2OConfig | None = Field(None, description="h2o's own knobs, applied when server.impl is h2o")
    caddy: CaddyConfig | None = Field(None, description="Caddy's own knobs, applied when server.impl is caddy")

    #: the implementation tables (``x-impl``): field name → the server.impl it configures
    IMPL_TABLES: ClassVar[dict[str, str]] = {'apache': 'apache', 'nginx': 'nginx', 'h2o': 'h2o', 'caddy': 'caddy'}

    #: per implementation, the common knobs it cannot set, each with the value that stands
    #: for its own behaviour (``x-cannot-set``): their default when it is ``impl``, and the
    #: only value it accepts
    CANNOT_SET: ClassVar[dict[str, dict[str, Any]]] = {'apache': {'write_chunk_bytes': 0}, 'nginx': {'write_chunk_bytes': 0}, 'h2o': {'write_chunk_bytes': 0, 'keep_alive': True, 'push': 'none'}, 'caddy': {'max_concurrent_streams': 0, 'write_chunk_bytes': 0, 'keep_alive': True, 'push': 'none'}}

    @model_validator(mode="before")
    @classmethod
    def _own_defaults(cls, data: Any) -> Any:
        """A common knob the chosen implementation cannot set, left out, is its own."""
        if not isinstance(data, dict):
            return data
        impl = data.get("impl", 'builtin')
        own = cls.CANNOT_SET.get(impl, {}) if isinstance(impl, str) else {}
        missing = {k: v for k, v in own.items() if k not in data}
        return {**data, **missing} if missing else data


class ClientConfig(_Model):
    """the page loader and its knobs (docs/client.md, docs/browser.md)"""

    impl: Literal["engine", "chromium"] = Field('engine', description="page loader: the engine's (fetch) or Chromium over CDP (browse)")
    mode: Literal["flat", "objects", "replay"] = Field('flat', description="flat: root then sub-resources; objects: all at once; replay: the page's dependency graph")
    max_connections_per_origin: int = Field(6, ge=1, le=64, description='HTTP/1.x connection limit per origin')
    dns: Literal["server", "static"] = Field('server', description='resolve through the DNS server across the path, or a static map')
    compute_scale: float = Field(1.0, ge=0, le=100, description='replay: multiply recorded computation times')
    priority: Literal["none", "chrome", "dependency"] = Field('none', description='request prioritisation policy')
    timeout_s: float = Field(120, gt=0, le=3600, description='a load taking longer is recorded with an error')
    view: Literal["first", "repeat"] = Field('first', description="first: a fresh profile; repeat: the page loaded once, every connection closed, then loaded again in the same profile (HTTP cache, TLS sessions, DNS and Alt-Svc caches warm) and the second load recorded (docs/vitals.md); the engine's loader models an HTTP cache (max-age, Expires, no-store, no-cache; revalidation with ETag/Last-Modified), the TLS session tickets (resumed handshakes, h3 0-RTT where server.session_resumption allows it) and the Alt-Svc cache")
    h3: Literal["forced", "alt-svc", "https-rr"] = Field('forced', description='how an h3 load finds HTTP/3 (docs/vitals.md, "HTTP/3 as browsers find it"): forced: QUIC from the first request; alt-svc: each origin first over HTTP/2 (TCP+TLS), QUIC once its Alt-Svc header announced h3 (the server is asked to announce it; a repeat view starts on QUIC); https-rr: the lab DNS serves an HTTPS record (alpn h3) for every origin and the loader starts on QUIC when it lists h3 (needs client.dns server). Loads of other protocols ignore it')
    cpu_slowdown: float = Field(1, ge=1, le=100, description="slow Chromium's renderer this many times (Emulation.setCPUThrottlingRate; Lighthouse's mobile preset uses 4); 1 = none; client.impl chromium")
    viewport: str = Field('1350x940', pattern='^[1-9][0-9]{0,3}x[1-9][0-9]{0,3}(@[0-9]+(\\.[0-9]+)?)?(,mobile)?$', description="Chromium's emulated screen: WIDTHxHEIGHT[@DPR][,mobile] in CSS pixels (default: Lighthouse's desktop screen); client.impl chromium")


class CaptureConfig(_Model):
    """what the engine writes besides load records"""

    har: bool = Field(True, description='write a HAR per load')
    pcap: bool = Field(False, description='write client- and server-side pcaps per load')
    screenshots: bool = Field(True, description='client.impl chromium: capture the frames of each load (Speed Index, visually complete, visual progress; the frames in frames/<load>/, docs/vitals.md); LCP and CLS are recorded either way')


class TrialSpecFields(_Model):
    """The fields of a trial spec (docs/trial-contract.md)."""

    allow_internet: bool = Field(False, description="a live page (url:) may name a public site: set only by --allow-internet (wirelab run, wirelab load); without it only names of the run's local internet (*.wirelab.test) are loaded (docs/live.md)")
    shards: int = Field(1, ge=0, le=64, description="origins the page's objects are spread over, 1–64; 0 = one origin per top-level-domain group (shard_mode tld) or per domain (shard_mode domain), and only with those modes")
    shard_mode: Literal["round-robin", "tld", "domain"] = Field('round-robin', description='round-robin: objects dealt over the shards in turn; tld / domain: each top-level-domain group / domain on one origin')
    protocols: list[Literal["h1", "h1s", "h2", "h2c", "h3", "spdy3"]] = Field(['h1s', 'h2'], min_length=1, description='protocols compared in this trial, each at most once; the first is the baseline')
    repetitions: int = Field(5, ge=1, le=10000, description='loads per protocol')
    order: Literal["alternate", "random"] = Field('alternate', description='A B A B … or a seeded shuffle')
    gap_ms: float = Field(0, ge=0, le=3600000, description='idle time between loads (at most an hour)')
    seed: int = Field(1, ge=0, le=9223372036854775807, description='seeds loss, jitter, random order and page generation')
    server: ServerConfig = Field(default_factory=ServerConfig, description="the origin server under test and its knobs (docs/server.md); the table of server.impl's name applies when that implementation is chosen and is left out of the resolved spec otherwise; a common knob the implementation cannot set (its table's x-cannot-set) defaults to the value that stands for its own behaviour, the only one it accepts")
    client: ClientConfig = Field(default_factory=ClientConfig, description='the page loader and its knobs (docs/client.md, docs/browser.md)')
    capture: CaptureConfig = Field(default_factory=CaptureConfig, description='what the engine writes besides load records')


class TrialSpecOwnFields(_Model):
    """One trial as the engine receives it (``schemas/trial-spec.schema.json``)."""

    contract: Literal[1] = Field(1, description='contract version the spec was written for')
    trial_id: str | None = Field(None, pattern='^[a-z0-9-]{1,40}$', description='names artifacts; default random')
    page: str = Field(min_length=1, description="corpus name (twitter), synthetic name (synthetic:64x10kB), a generated corpus's page (web200:17, gen:PROFILE:SEED:COUNT:INDEX; docs/pages.md), a path to a page JSON file, or a live page: url: and an http(s) URL (url:https://h3.wirelab.test/L/fixture/; docs/live.md)")
    network: str = Field('native', description='profile string, docs/profile-grammar.md')


#: every generated model, by class name
CONTRACT_MODELS: dict[str, type[_Model]] = {
    'ApacheConfig': ApacheConfig,
    'NginxConfig': NginxConfig,
    'H2OConfig': H2OConfig,
    'CaddyConfig': CaddyConfig,
    'ServerConfig': ServerConfig,
    'ClientConfig': ClientConfig,
    'CaptureConfig': CaptureConfig,
    'TrialSpecFields': TrialSpecFields,
    'TrialSpecOwnFields': TrialSpecOwnFields,
}
