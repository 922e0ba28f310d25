package config

import (
	"fmt"
	"net/url"
	"strings"
)

// OTLP is the [log.otlp] table: each decision sent to an OpenTelemetry
// collector as an OTLP/HTTP log record.
type OTLP struct {
	// Endpoint is the URL records are POSTed to: the configured endpoint,
	// with "/v1/logs" added when it has no path (as
	// OTEL_EXPORTER_OTLP_ENDPOINT is read).
	Endpoint string
	// Headers are sent with every request (a collector's API key).
	Headers map[string]string
}

func (c *checker) otlp(k string, v any) OTLP {
	var o OTLP
	t := c.asTable(k, v)
	c.table(k, t, map[string]func(string, any){
		"endpoint": func(k string, v any) {
			s := c.str(k, v)
			if c.failed(k) {
				return
			}
			u, err := url.Parse(s)
			switch {
			case err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https" || u.RawQuery != "" || u.Fragment != "":
				c.fail(k, "%q is not an http(s) URL of a collector (e.g. \"https://collector.example.com:4318\")", s)
				return
			case u.Scheme == "http" && !loopbackHost(u.Hostname()):
				c.fail(k, "%q: plain http is allowed only for a collector on this machine (localhost, 127.0.0.1, [::1]); use https", s)
				return
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/logs"
			}
			o.Endpoint = u.String()
		},
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
	return o
}
