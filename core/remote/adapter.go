package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// A fleet's LoRA adapters are loaded and unloaded through vLLM's runtime
// LoRA API (the server started with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True
// and --enable-lora): POST {base}/load_lora_adapter with lora_name and
// lora_path, POST {base}/unload_lora_adapter with lora_name. A chat call
// then names the adapter as its model.

// LoadAdapter has every endpoint load the PEFT adapter folder at path (as
// the servers see it) under name, and makes name the adapter an endpoint
// loads before it rejoins the pool. An endpoint that fails to load it is
// taken out (its health check, later, loads it again). It fails only when
// no endpoint loaded it.
func (pl *Pool) LoadAdapter(ctx context.Context, name, path string) error {
	if name == "" || path == "" {
		return errors.New("remote: an adapter needs a name and a path")
	}
	pl.mu.Lock()
	pl.adapter, pl.adapterPath = name, path
	eps := make([]*endpoint, 0, len(pl.eps))
	for _, ep := range pl.eps {
		if !ep.out {
			eps = append(eps, ep)
		}
	}
	pl.mu.Unlock()
	errs := make([]error, len(eps))
	done := make(chan int)
	for i, ep := range eps {
		go func() {
			errs[i] = ep.loadAdapter(ctx, name, path)
			done <- i
		}()
	}
	for range eps {
		<-done
	}
	loaded := 0
	var fails []string
	pl.mu.Lock()
	for i, ep := range eps {
		if errs[i] == nil {
			loaded++
			continue
		}
		ep.errors++
		fails = append(fails, errs[i].Error())
		if !ep.out {
			pl.takeOut(ep)
		}
	}
	pl.signal()
	pl.mu.Unlock()
	if loaded == 0 {
		if len(fails) == 0 {
			return fmt.Errorf("remote: load adapter %s: every one of the %d servers is out", name, len(pl.eps))
		}
		return fmt.Errorf("remote: load adapter %s: no server loaded it: %s", name, strings.Join(fails, "; "))
	}
	return nil
}

// UnloadAdapter has every endpoint that is in unload adapter name. An
// endpoint that fails to is counted, not taken out: it still serves the
// current adapter. It returns the failures joined.
func (pl *Pool) UnloadAdapter(ctx context.Context, name string) error {
	pl.mu.Lock()
	var eps []*endpoint
	for _, ep := range pl.eps {
		if !ep.out {
			eps = append(eps, ep)
		}
	}
	pl.mu.Unlock()
	var errs []error
	for _, ep := range eps {
		if err := ep.post(ctx, "/unload_lora_adapter", map[string]string{"lora_name": name}); err != nil {
			pl.mu.Lock()
			ep.errors++
			pl.mu.Unlock()
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// loadAdapter loads the adapter at one endpoint; one it holds already
// (vLLM says "already been loaded") counts as loaded.
func (ep *endpoint) loadAdapter(ctx context.Context, name, path string) error {
	err := ep.post(ctx, "/load_lora_adapter", map[string]string{"lora_name": name, "lora_path": path})
	var f *failure
	if errors.As(err, &f) && f.status == http.StatusBadRequest && strings.Contains(f.msg, "already") {
		return nil
	}
	return err
}

// post sends body to the endpoint's base + path and wants a 2xx.
func (ep *endpoint) post(ctx context.Context, path string, body map[string]string) error {
	u := baseOf(ep.url) + path
	actx, cancel := context.WithTimeout(ctx, ep.p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, u, bytes.NewReader(mustJSON(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if ep.p.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+ep.p.opts.APIKey)
	}
	resp, err := ep.p.client.Do(req)
	if err != nil {
		return fmt.Errorf("remote: POST %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("remote: POST %s (adapter %s): %w", u, body["lora_name"],
			&failure{msg: fmt.Sprintf("HTTP %s: %s", resp.Status, serverMessage(b)), status: resp.StatusCode})
	}
	return nil
}
