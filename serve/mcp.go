package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
)

// mcpRoute hands /mcp to the MCP gateway: MCP's streamable HTTP transport,
// each Mcp-Session-Id one client connection (one celguard session).
func (s *Server) mcpRoute(w http.ResponseWriter, r *http.Request) {
	if s.mcpHandler == nil {
		writeError(w, http.StatusNotFound, CodeMCPDisabled, "this server fronts no MCP server: start it with --mcp-config FILE")
		return
	}
	s.mcpHandler.ServeHTTP(w, r)
}

// pinRequest is the body of POST /v1/mcp/pins/accept.
type pinRequest struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

// acceptPin accepts the changed definition of a tool the gateway refused.
func (s *Server) acceptPin(w http.ResponseWriter, r *http.Request) {
	if s.mcp == nil {
		writeError(w, http.StatusNotFound, CodeMCPDisabled, "this server fronts no MCP server: start it with --mcp-config FILE")
		return
	}
	var req pinRequest
	if !readJSON(w, r, s.cfg.MaxBodyBytes, &req, false) {
		return
	}
	if req.Server == "" || req.Tool == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidInput, "give the server and the tool whose changed definition to accept")
		return
	}
	digest, err := s.mcp.AcceptPin(req.Server, req.Tool)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusNotFound, CodePinNotPending, fmt.Sprintf("no changed definition of %s's tool %s is waiting", req.Server, req.Tool))
	case err != nil:
		writeError(w, http.StatusInternalServerError, CodeInternalError, err.Error())
	default:
		s.log.Info("MCP tool definition accepted", "server", req.Server, "tool", req.Tool, "digest", digest)
		writeJSON(w, http.StatusOK, map[string]string{"server": req.Server, "tool": req.Tool, "digest": digest})
	}
}
