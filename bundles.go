package celguard

import (
	"context"
	"sync"
	"time"

	"github.com/celguard/celguard/bundle"
)

// BundleStatus is a configured bundle as a Guard reports it (/v1/status/details,
// doctor): the store's status, its layer, whether it is mandatory and
// whether it blocks every call now.
type BundleStatus struct {
	bundle.Status
	Layer     string `json:"layer"`
	Mandatory bool   `json:"mandatory,omitempty"`
	// Blocked: no good bundle is in force and the bundle is mandatory, or
	// the source offered a refused bundle and on_refused is block: every
	// call is blocked (bundle_unavailable).
	Blocked bool `json:"blocked,omitempty"`
}

// BundleStatuses reports every bundle c configures.
func (c Config) BundleStatuses(ctx context.Context) ([]BundleStatus, error) {
	bcs, err := c.BundleConfigs()
	if err != nil {
		return nil, err
	}
	out := make([]BundleStatus, 0, len(bcs))
	for i := range bcs {
		bc := &bcs[i]
		bs := BundleStatus{Layer: bc.Layer, Mandatory: bc.Mandatory}
		dec, _ := bc.Decide(ctx)
		bs.Blocked = dec.Blocked
		if st, err := bc.Store(); err != nil {
			bs.Status = bundle.Status{Name: bc.Name, Error: err.Error()}
		} else {
			bs.Status = st.Status(ctx)
		}
		out = append(out, bs)
	}
	return out, nil
}

// Bundles reports the bundles the guard's Config configures: which is in
// force (name, version, serial), where from, and the last refusal.
func (g *Guard) Bundles(ctx context.Context) []BundleStatus {
	bs, err := g.cfg.BundleStatuses(ctx)
	if err != nil {
		return []BundleStatus{{Status: bundle.Status{Error: err.Error()}}}
	}
	return bs
}

// PullBundles fetches every configured bundle from its source once
// (bundle.Store.Update) and returns each failure by bundle name; the
// bundles in force join the set at the next Reload.
func (c Config) PullBundles(ctx context.Context) map[string]error {
	bcs, err := c.BundleConfigs()
	if err != nil {
		return map[string]error{"": err}
	}
	errs := map[string]error{}
	for i := range bcs {
		if err := pullOne(ctx, &bcs[i]); err != nil {
			errs[bcs[i].Name] = err
		}
	}
	return errs
}

func pullOne(ctx context.Context, bc *bundle.LayerConfig) error {
	st, err := bc.Store()
	if err != nil {
		return err
	}
	src, err := bc.OpenSource()
	if err != nil {
		return err
	}
	_, err = st.Update(ctx, src)
	return err
}

// DefaultBundleInterval is how often WatchBundles pulls a bundle whose
// configuration names no interval.
const DefaultBundleInterval = 5 * time.Minute

// WatchBundles pulls every configured bundle at its interval until ctx
// ends, each in its own goroutine, calling report (when not nil) after
// every pull with its error (nil on success). celguard serve runs it; its
// policy watch puts a new bundle in force at the next reload.
func (g *Guard) WatchBundles(ctx context.Context, report func(name string, err error)) {
	bcs, err := g.cfg.BundleConfigs()
	if err != nil {
		if report != nil {
			report("", err)
		}
		return
	}
	var wg sync.WaitGroup
	for i := range bcs {
		bc := &bcs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(bc.IntervalOr(DefaultBundleInterval))
			defer t.Stop()
			for {
				err := pullOne(ctx, bc)
				if report != nil && ctx.Err() == nil {
					report(bc.Name, err)
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	wg.Wait()
}
