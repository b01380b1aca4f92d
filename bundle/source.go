package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
)

// ArtifactType is the OCI artifact type of a bundle: its manifest's
// artifactType, with two layers, the archive (MediaType) and its signature
// envelope (EnvelopeMediaType).
const ArtifactType = "application/vnd.celguard.bundle.v1"

// Fetched is what a Source returned: the archive and its envelope, or
// NotModified when the source says nothing changed since Tag.
type Fetched struct {
	Archive, Envelope []byte
	// Tag identifies the version fetched (the OCI manifest's digest, the
	// HTTPS archive's ETag), passed back on the next Fetch.
	Tag         string
	NotModified bool
}

// Source is where bundles come from.
type Source interface {
	// Fetch returns the bundle in the source, or NotModified when it is
	// still the one tagged prev. An error is the source's: CodeUnreachable
	// for a network or server failure, CodeTooLarge for a file over lim.
	Fetch(ctx context.Context, prev string, lim Limits) (*Fetched, error)
	// String names the source for messages and reports.
	String() string
}

// ParseSource parses a source: oci://HOST/REPO:TAG (an OCI registry, over
// HTTPS; plainHTTP allows HTTP for a registry on loopback) or https://URL
// (the archive; its envelope at URL.dsse.json). client is the HTTP client
// of both (nil: http.DefaultClient's transport).
func ParseSource(s string, client *http.Client, plainHTTP bool) (Source, error) {
	switch {
	case strings.HasPrefix(s, "oci://"):
		ref := strings.TrimPrefix(s, "oci://")
		repo, err := remote.NewRepository(ref)
		if err != nil {
			return nil, fmt.Errorf("bundle source %q: %w", s, err)
		}
		if repo.Reference.Reference == "" {
			return nil, fmt.Errorf("bundle source %q: name a tag (oci://HOST/REPO:TAG)", s)
		}
		if plainHTTP && !isLoopback(repo.Reference.Host()) {
			return nil, fmt.Errorf("bundle source %q: plain HTTP is only for a registry on loopback", s)
		}
		repo.PlainHTTP = plainHTTP
		if client != nil {
			repo.Client = client
		}
		return &OCI{repo: repo, ref: repo.Reference.Reference}, nil
	case strings.HasPrefix(s, "https://"):
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("bundle source %q: not a URL", s)
		}
		if client == nil {
			client = &http.Client{}
		}
		return &HTTPS{URL: s, Client: client}, nil
	}
	return nil, fmt.Errorf("bundle source %q: use oci://HOST/REPO:TAG or https://URL", s)
}

func isLoopback(host string) bool {
	h := host
	if i := strings.LastIndex(h, ":"); i >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return h == "localhost" || h == "127.0.0.1" || h == "[::1]"
}

// OCI is a bundle in an OCI registry, through oras-go.
type OCI struct {
	repo *remote.Repository
	ref  string
}

func (o *OCI) String() string { return "oci://" + o.repo.Reference.String() }

func unreachable(src fmt.Stringer, err error) error {
	return wrap(CodeUnreachable, err, "%s", src)
}

// Fetch resolves the tag, and unless it is prev, fetches the manifest and
// its two layers; oras-go checks every blob against its digest, and each
// size is checked against lim before the blob is fetched.
func (o *OCI) Fetch(ctx context.Context, prev string, lim Limits) (*Fetched, error) {
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	desc, err := o.repo.Resolve(ctx, o.ref)
	if err != nil {
		return nil, unreachable(o, err)
	}
	if prev != "" && desc.Digest.String() == prev {
		return &Fetched{Tag: prev, NotModified: true}, nil
	}
	if desc.Size > 1<<20 {
		return nil, errorf(CodeTooLarge, "%s: the manifest is %d bytes", o, desc.Size)
	}
	mdata, err := content.FetchAll(ctx, o.repo, desc)
	if err != nil {
		return nil, unreachable(o, err)
	}
	var man ocispec.Manifest
	if err := json.Unmarshal(mdata, &man); err != nil {
		return nil, wrap(CodeMalformed, err, "%s: the OCI manifest", o)
	}
	if man.ArtifactType != ArtifactType && man.Config.MediaType != ArtifactType {
		return nil, errorf(CodeMalformed, "%s is a %q, not a celguard bundle", o, man.ArtifactType)
	}
	f := &Fetched{Tag: desc.Digest.String()}
	for _, l := range man.Layers {
		var dst *[]byte
		var max int64
		switch l.MediaType {
		case MediaType:
			dst, max = &f.Archive, lim.Archive
		case EnvelopeMediaType:
			dst, max = &f.Envelope, maxEnvelope
		default:
			continue
		}
		if *dst != nil {
			return nil, errorf(CodeMalformed, "%s: two %s layers", o, l.MediaType)
		}
		if l.Size > max {
			return nil, errorf(CodeTooLarge, "%s: the %s layer is %d bytes, over the limit of %d", o, l.MediaType, l.Size, max)
		}
		data, err := content.FetchAll(ctx, o.repo, l)
		if err != nil {
			if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) {
				return nil, wrap(CodeMalformed, err, "%s: the %s layer does not match its digest", o, l.MediaType)
			}
			return nil, unreachable(o, err)
		}
		*dst = data
	}
	if f.Archive == nil {
		return nil, errorf(CodeMalformed, "%s: no %s layer", o, MediaType)
	}
	return f, nil
}

// Push uploads the archive and its envelope (nil: none, which every
// machine will refuse) as one artifact and points tag at it. It returns
// the manifest's digest.
func (o *OCI) Push(ctx context.Context, archive, envelope []byte, tags ...string) (string, error) {
	layers := []ocispec.Descriptor{content.NewDescriptorFromBytes(MediaType, archive)}
	blobs := [][]byte{archive}
	if envelope != nil {
		layers = append(layers, content.NewDescriptorFromBytes(EnvelopeMediaType, envelope))
		blobs = append(blobs, envelope)
	}
	for i, d := range layers {
		exists, err := o.repo.Exists(ctx, d)
		if err != nil {
			return "", unreachable(o, err)
		}
		if !exists {
			if err := o.repo.Push(ctx, d, bytes.NewReader(blobs[i])); err != nil {
				return "", unreachable(o, err)
			}
		}
	}
	desc, err := oras.PackManifest(ctx, o.repo, oras.PackManifestVersion1_1, ArtifactType, oras.PackManifestOptions{Layers: layers})
	if err != nil {
		return "", unreachable(o, err)
	}
	for _, t := range append([]string{o.ref}, tags...) {
		if err := o.repo.Tag(ctx, desc, t); err != nil {
			return "", unreachable(o, err)
		}
	}
	return desc.Digest.String(), nil
}

// HTTPS is a bundle at a URL: the archive at URL, its envelope at
// URL.dsse.json. The archive's ETag tags what was fetched, so a server
// that answers 304 Not Modified is not read again.
type HTTPS struct {
	URL    string
	Client *http.Client
}

func (h *HTTPS) String() string { return h.URL }

// Fetch gets the archive (If-None-Match: prev) and then its envelope.
func (h *HTTPS) Fetch(ctx context.Context, prev string, lim Limits) (*Fetched, error) {
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	archive, etag, notModified, err := h.get(ctx, h.URL, prev, lim.Archive)
	if err != nil || notModified {
		return &Fetched{Tag: prev, NotModified: notModified}, err
	}
	envelope, _, _, err := h.get(ctx, h.URL+".dsse.json", "", maxEnvelope)
	if err != nil && CodeOf(err) != CodeUnsigned {
		return nil, err
	}
	return &Fetched{Archive: archive, Envelope: envelope, Tag: etag}, nil
}

func (h *HTTPS) get(ctx context.Context, u, etag string, max int64) (data []byte, tag string, notModified bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", false, unreachable(h, err)
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return nil, "", false, unreachable(h, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && etag != "":
		return nil, etag, true, nil
	case resp.StatusCode == http.StatusNotFound && strings.HasSuffix(u, ".dsse.json"):
		return nil, "", false, errorf(CodeUnsigned, "%s: no envelope", u)
	case resp.StatusCode != http.StatusOK:
		return nil, "", false, unreachable(h, fmt.Errorf("GET %s: %s", u, resp.Status))
	case resp.ContentLength > max:
		return nil, "", false, errorf(CodeTooLarge, "%s is %d bytes, over the limit of %d", u, resp.ContentLength, max)
	}
	data, err = io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, "", false, unreachable(h, err)
	}
	if int64(len(data)) > max {
		return nil, "", false, errorf(CodeTooLarge, "%s is over the limit of %d bytes", u, max)
	}
	return data, resp.Header.Get("ETag"), false, nil
}
