package impl

// Knobs are a run's server settings: the trial spec's "server" object (docs/trial-contract.md),
// decoded from the schema that defines every field's range and default
// (engine/contract/schemas/trial-spec.schema.json). Only the table of the chosen implementation
// is set; the others are nil.
type Knobs struct {
	Impl                 string `json:"impl"`                   // builtin | apache | nginx | h2o | caddy
	MaxConcurrentStreams int    `json:"max_concurrent_streams"` // 1–1000; 0 = the implementation's own default
	WriteChunkBytes      int    `json:"write_chunk_bytes"`      // 0 (the implementation's own) or 256–1048576
	TLSVersion           string `json:"tls_version"`            // 1.2 | 1.3
	SessionResumption    bool   `json:"session_resumption"`
	KeepAlive            bool   `json:"keep_alive"`
	Push                 string `json:"push"`             // none | all | embedding-level | dependency-level:N
	Config               string `json:"config,omitempty"` // the user's configuration template; "" = generated

	Apache *ApacheKnobs `json:"apache,omitempty"`
	Nginx  *NginxKnobs  `json:"nginx,omitempty"`
	H2O    *H2OKnobs    `json:"h2o,omitempty"`
	Caddy  *CaddyKnobs  `json:"caddy,omitempty"`
}

// ApacheKnobs are Apache httpd's own settings. 0 means the Debian package's default for the MPM
// (max_connections_per_child: 0 is unlimited, which is that default).
type ApacheKnobs struct {
	MPM                    string `json:"mpm"` // event | worker | prefork
	StartServers           int    `json:"start_servers"`
	ServerLimit            int    `json:"server_limit"`
	ThreadsPerChild        int    `json:"threads_per_child"`
	ThreadLimit            int    `json:"thread_limit"`
	MaxRequestWorkers      int    `json:"max_request_workers"`
	MinSpareThreads        int    `json:"min_spare_threads"`
	MaxSpareThreads        int    `json:"max_spare_threads"`
	MinSpareServers        int    `json:"min_spare_servers"`
	MaxSpareServers        int    `json:"max_spare_servers"`
	MaxConnectionsPerChild int    `json:"max_connections_per_child"`
	H2MinWorkers           int    `json:"h2_min_workers"`
	H2MaxWorkers           int    `json:"h2_max_workers"`
}

// NginxKnobs are nginx's own settings.
type NginxKnobs struct {
	WorkerProcesses   int `json:"worker_processes"` // 0 = auto
	WorkerConnections int `json:"worker_connections"`
	KeepaliveRequests int `json:"keepalive_requests"`
}

// H2OKnobs are h2o's own settings.
type H2OKnobs struct {
	NumThreads int `json:"num_threads"` // 0 = one per CPU
}

// CaddyKnobs are Caddy's own settings.
type CaddyKnobs struct {
	GOMAXPROCS int `json:"gomaxprocs"` // 0 = one per CPU
}
