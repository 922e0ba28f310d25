module github.com/permhost/permhost/plugins/examples/plan-mode

go 1.26.0

require github.com/permhost/permhost v0.0.0

require github.com/extism/go-pdk v1.1.3 // indirect

replace github.com/permhost/permhost => ../../..
