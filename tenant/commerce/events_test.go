package commerce_test

import "testing"

// eventRecorder: placeholder until the webhook outbox lands.
type eventRecorder struct{}

func (f *fixture) recordEvents(t *testing.T) *eventRecorder { return &eventRecorder{} }

func (r *eventRecorder) expect(t *testing.T, topic string, orderID int64, status, payment string) {}

func (r *eventRecorder) none(t *testing.T) {}

func (r *eventRecorder) expectConnect(t *testing.T, want map[string]any) {}
