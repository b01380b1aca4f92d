package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exporters are the three signals' OTLP exporters.
type exporters struct {
	spans   sdktrace.SpanExporter
	logs    sdklog.Exporter
	metrics sdkmetric.Exporter
}

// newExporters makes the OTLP exporters of proto. host (host:port) and
// insecure override the environment's endpoint when host is set. Retries
// are off: a collector that refuses loses the batch (counted) rather than
// holding a hook process.
func newExporters(ctx context.Context, proto, host string, insecure bool, headers map[string]string) (exporters, error) {
	var ex exporters
	var err error
	switch proto {
	case ProtocolGRPC:
		to := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false})}
		lo := []otlploggrpc.Option{otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false})}
		mo := []otlpmetricgrpc.Option{otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false})}
		if host != "" {
			to = append(to, otlptracegrpc.WithEndpoint(host))
			lo = append(lo, otlploggrpc.WithEndpoint(host))
			mo = append(mo, otlpmetricgrpc.WithEndpoint(host))
			if insecure {
				to = append(to, otlptracegrpc.WithInsecure())
				lo = append(lo, otlploggrpc.WithInsecure())
				mo = append(mo, otlpmetricgrpc.WithInsecure())
			}
		}
		if len(headers) > 0 {
			to = append(to, otlptracegrpc.WithHeaders(headers))
			lo = append(lo, otlploggrpc.WithHeaders(headers))
			mo = append(mo, otlpmetricgrpc.WithHeaders(headers))
		}
		if ex.spans, err = otlptracegrpc.New(ctx, to...); err != nil {
			return ex, fmt.Errorf("telemetry: %w", err)
		}
		if ex.logs, err = otlploggrpc.New(ctx, lo...); err != nil {
			return ex, fmt.Errorf("telemetry: %w", err)
		}
		if ex.metrics, err = otlpmetricgrpc.New(ctx, mo...); err != nil {
			return ex, fmt.Errorf("telemetry: %w", err)
		}
	default:
		to := []otlptracehttp.Option{otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false})}
		lo := []otlploghttp.Option{otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false})}
		mo := []otlpmetrichttp.Option{otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false})}
		if host != "" {
			to = append(to, otlptracehttp.WithEndpoint(host))
			lo = append(lo, otlploghttp.WithEndpoint(host))
			mo = append(mo, otlpmetrichttp.WithEndpoint(host))
			if insecure {
				to = append(to, otlptracehttp.WithInsecure())
				lo = append(lo, otlploghttp.WithInsecure())
				mo = append(mo, otlpmetrichttp.WithInsecure())
			}
		}
		if len(headers) > 0 {
			to = append(to, otlptracehttp.WithHeaders(headers))
			lo = append(lo, otlploghttp.WithHeaders(headers))
			mo = append(mo, otlpmetrichttp.WithHeaders(headers))
		}
		if ex.spans, err = otlptracehttp.New(ctx, to...); err != nil {
			return ex, fmt.Errorf("telemetry: %w", err)
		}
		if ex.logs, err = otlploghttp.New(ctx, lo...); err != nil {
			return ex, fmt.Errorf("telemetry: %w", err)
		}
		if ex.metrics, err = otlpmetrichttp.New(ctx, mo...); err != nil {
			return ex, fmt.Errorf("telemetry: %w", err)
		}
	}
	return ex, nil
}

// countingSpans counts what its exporter sent and failed to send.
type countingSpans struct {
	sdktrace.SpanExporter
	t *Telemetry
}

// ExportSpans implements sdktrace.SpanExporter.
func (c *countingSpans) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.t.spansFailed.Add(int64(len(spans)))
	} else {
		c.t.spansExported.Add(int64(len(spans)))
	}
	return err
}

// countingLogs counts what its exporter sent and failed to send.
type countingLogs struct {
	sdklog.Exporter
	t *Telemetry
}

// Export implements sdklog.Exporter.
func (c *countingLogs) Export(ctx context.Context, recs []sdklog.Record) error {
	err := c.Exporter.Export(ctx, recs)
	if err != nil {
		c.t.logsFailed.Add(int64(len(recs)))
	} else {
		c.t.logsExported.Add(int64(len(recs)))
	}
	return err
}
