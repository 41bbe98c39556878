package harvest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConcurrencyLimitRegistration(t *testing.T) {
	t.Parallel()
	fn := func(Context, string) (string, error) { return "", nil }
	act := func(*ActivityContext, string) (string, error) { return "", nil }
	t.Run("LimitedActivitiesListsTheirLimits", func(t *testing.T) {
		t.Parallel()
		r := NewRegistry()
		require.NoError(t, r.Register(NewActivity("plain", act), NewActivity("capped", act).WithConcurrency(ConcurrencyLimit{MaxRunning: 1, KeyPointer: "/k"})))
		require.Equal(t, map[string]ConcurrencyLimit{"capped": {MaxRunning: 1, KeyPointer: "/k"}}, r.LimitedActivities())
		require.False(t, r.HasLimits(), "a limited activity queues no run")
	})
	t.Run("HasLimitsOnlyWithALimitedWorkflow", func(t *testing.T) {
		t.Parallel()
		r := NewRegistry()
		require.NoError(t, r.Register(NewWorkflow("plain", fn), NewWorkflow("zero", fn).WithConcurrency(ConcurrencyLimit{})))
		require.False(t, r.HasLimits())
		require.Empty(t, r.LimitedWorkflows())
		require.NoError(t, r.Register(NewWorkflow("capped", fn).WithConcurrency(ConcurrencyLimit{MaxRunning: 2, KeyPointer: "/a~1b"})))
		require.True(t, r.HasLimits())
		require.Equal(t, map[string]ConcurrencyLimit{"capped": {MaxRunning: 2, KeyPointer: "/a~1b"}}, r.LimitedWorkflows())
	})
	for _, c := range []struct {
		name string
		lim  ConcurrencyLimit
	}{
		{"NegativeMax", ConcurrencyLimit{MaxRunning: -1}},
		{"PointerWithoutSlash", ConcurrencyLimit{MaxRunning: 1, KeyPointer: "customer"}},
		{"BadEscape", ConcurrencyLimit{MaxRunning: 1, KeyPointer: "/a~2"}},
	} {
		t.Run("Refused"+c.name, func(t *testing.T) {
			t.Parallel()
			require.Error(t, NewRegistry().Register(NewWorkflow("w", fn).WithConcurrency(c.lim)))
			require.Error(t, NewRegistry().Register(NewActivity("a", act).WithConcurrency(c.lim)))
		})
	}
}

func TestParsePointer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"/customer", []string{"customer"}, true},
		{"/a~1b/c~0d/0", []string{"a/b", "c~d", "0"}, true},
		{"/", []string{""}, true},
		{"x", nil, false},
		{"/a~", nil, false},
		{"/a~x", nil, false},
	} {
		got, err := ParsePointer(c.in)
		if !c.ok {
			require.ErrorIs(t, err, ErrPointer, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

func TestChildOptionsFlowFields(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		o    ChildOptions
		ok   bool
	}{
		{"None", ChildOptions{}, true},
		{"All", ChildOptions{ConcurrencyKey: "k", Priority: 1, FairnessKey: "f", FairnessWeight: MaxFairnessWeight}, true},
		{"PriorityTooHigh", ChildOptions{Priority: PriorityLowest + 1}, false},
		{"PriorityNegative", ChildOptions{Priority: -1}, false},
		{"WeightTooHigh", ChildOptions{FairnessWeight: MaxFairnessWeight + 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.check()
			if c.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
	t.Run("DigestUnchangedWithoutThem", func(t *testing.T) {
		d := ChildWorkflowInitiatedData{WorkflowName: "w", WorkflowID: "id", Input: []byte(`1`), ParentClosePolicy: "TERMINATE"}
		withKey := d
		withKey.ConcurrencyKey = "k"
		require.NotEqual(t, childDigest(d), childDigest(withKey), "the flow fields are part of a child's digest when set")
		before := newDigest("child", 0)
		before.str(d.WorkflowName)
		before.str(d.WorkflowID)
		before.bytes(d.Input)
		before.str(d.ParentClosePolicy)
		before.int(d.ExecutionTimeoutMS)
		before.int(d.RunTimeoutMS)
		require.Equal(t, before.sum(), childDigest(d), "a child without them has the digest it had before they existed")
	})
}
