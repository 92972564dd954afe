"""wirelab — a laboratory for web protocols.

Load pages over HTTP/1.1, HTTP/2 and HTTP/3 through an emulated network, measure every load down to
the packet, and compare the protocols. The data plane is the Go binary ``wirelab-engine``; this
package is the control plane (specs, sweeps, results, analysis, reports).
"""

__version__ = "0.1.0.dev0"

__all__ = ["__version__"]
