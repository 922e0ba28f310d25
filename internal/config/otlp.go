package config

import (
	"fmt"
	"net/url"
	"strings"
)

// OTLP is the [log.otlp] table: each decision sent to an OpenTelemetry
// collector as an OTLP/HTTP log record, and as a span unless spans =
// false.
type OTLP struct {
	// Endpoint is the URL records are POSTed to: the configured endpoint,
	// with "/v1/logs" added when it has no path (as
	// OTEL_EXPORTER_OTLP_ENDPOINT is read).
	Endpoint string
	// TracesEndpoint is where the decisions' spans are POSTed: the
	// traces_endpoint key, else the endpoint with "/v1/traces" for its
	// "/v1/logs"; empty with spans = false.
	TracesEndpoint string
	// Headers are sent with every request (a collector's API key).
	Headers map[string]string
}

// collectorURL checks the URL of a collector's endpoint: http(s), plain
// http only on loopback.
func (c *checker) collectorURL(k string, v any) *url.URL {
	s := c.str(k, v)
	if c.failed(k) {
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" || u.RawQuery != "" || u.Fragment != "":
		c.fail(k, "%q is not an http(s) URL of a collector (e.g. \"https://collector.example.com:4318\")", s)
		return nil
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		c.fail(k, "%q: plain http is allowed only for a collector on this machine (localhost, 127.0.0.1, [::1]); use https", s)
		return nil
	}
	return u
}

func (c *checker) otlp(k string, v any) OTLP {
	var o OTLP
	spans, tracesSet := true, false
	t := c.asTable(k, v)
	c.table(k, t, map[string]func(string, any){
		"endpoint": func(k string, v any) {
			u := c.collectorURL(k, v)
			if u == nil {
				return
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/logs"
			}
			o.Endpoint = u.String()
		},
		"traces_endpoint": func(k string, v any) {
			tracesSet = true
			if u := c.collectorURL(k, v); u != nil {
				if u.Path == "" || u.Path == "/" {
					u.Path = "/v1/traces"
				}
				o.TracesEndpoint = u.String()
			}
		},
		"spans": func(k string, v any) { spans = c.boolean(k, v) },
		"headers": func(k string, v any) {
			h := c.asTable(k, v)
			o.Headers = map[string]string{}
			for name, val := range h {
				key := fmt.Sprintf("%s.%s", k, name)
				o.Headers[name] = c.str(key, val)
				if strings.ContainsAny(name+o.Headers[name], "\r\n") || name == "" {
					c.fail(key, "not a valid HTTP header")
				}
			}
		},
	})
	if _, ok := t["endpoint"]; !ok && t != nil {
		c.fail(k, "missing key \"endpoint\" (the collector's OTLP/HTTP URL)")
	}
	switch {
	case !spans:
		o.TracesEndpoint = ""
	case tracesSet || o.Endpoint == "":
	case strings.HasSuffix(o.Endpoint, "/v1/logs"):
		o.TracesEndpoint = strings.TrimSuffix(o.Endpoint, "/v1/logs") + "/v1/traces"
	default:
		c.fail(k+".endpoint", "%q does not end in /v1/logs, so where spans go is not known: set traces_endpoint, or spans = false", o.Endpoint)
	}
	return o
}
