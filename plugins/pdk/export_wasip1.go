//go:build wasip1

// The host calls the exports; nothing in Go does.
//lint:file-ignore U1000 functions exported with go:wasmexport

package pdk

import extism "github.com/extism/go-pdk"

// The exports return 0 on success; on failure they set the Extism error and
// return 1, which the host reports as a failure of the plugin.

//go:wasmexport permhost_decide
func permhostDecide() int32 {
	if registered == nil {
		return fail(ErrNotRegistered)
	}
	out, err := Handle(*registered, extism.Input())
	if err != nil {
		return fail(err)
	}
	extism.Output(out)
	return 0
}

//go:wasmexport permhost_abi
func permhostABI() int32 {
	extism.Output(Version())
	return 0
}

//go:wasmexport permhost_describe
func permhostDescribe() int32 {
	if registered == nil {
		return fail(ErrNotRegistered)
	}
	out, err := Describe(*registered)
	if err != nil {
		return fail(err)
	}
	extism.Output(out)
	return 0
}

//go:wasmexport permhost_check_config
func permhostCheckConfig() int32 {
	if registered == nil {
		return fail(ErrNotRegistered)
	}
	out, err := CheckConfig(*registered, extism.Input())
	if err != nil {
		return fail(err)
	}
	extism.Output(out)
	return 0
}

func fail(err error) int32 {
	extism.SetError(err)
	return 1
}

// Log writes msg to the decision log at info level. The host bounds what
// it keeps.
func Log(msg string) { extism.Log(extism.LogInfo, msg) }
