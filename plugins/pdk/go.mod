module github.com/permhost/permhost/plugins/pdk

go 1.26.0

require (
	github.com/extism/go-pdk v1.1.3
	github.com/permhost/permhost v0.0.0
)

replace github.com/permhost/permhost => ../..
