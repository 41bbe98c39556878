package harvest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harvestd/harvest"
)

func TestRegisterIsAtomic(t *testing.T) {
	t.Parallel()
	one := harvest.NewWorkflow("one", func(harvest.Context, int) (int, error) { return 1, nil })
	two := harvest.NewWorkflow("two", func(harvest.Context, int) (int, error) { return 2, nil })
	act := harvest.NewActivity("act", func(*harvest.ActivityContext, int) (int, error) { return 0, nil })

	t.Run("DuplicateOfARegisteredNameAddsNothing", func(t *testing.T) {
		reg := harvest.NewRegistry().MustRegister(one)
		err := reg.Register(two, act, one)
		require.ErrorIs(t, err, harvest.ErrDuplicateName)
		require.Equal(t, []string{"one"}, reg.WorkflowNames())
		require.NoError(t, reg.Register(two, act), "nothing of the failed call was kept")
	})

	t.Run("DuplicateWithinOneCallAddsNothing", func(t *testing.T) {
		reg := harvest.NewRegistry()
		require.ErrorIs(t, reg.Register(one, two, one), harvest.ErrDuplicateName)
		require.Empty(t, reg.WorkflowNames())
	})

	t.Run("EmptyNameAddsNothing", func(t *testing.T) {
		reg := harvest.NewRegistry()
		nameless := harvest.NewActivity("", func(*harvest.ActivityContext, int) (int, error) { return 0, nil })
		require.Error(t, reg.Register(one, nameless))
		require.Empty(t, reg.WorkflowNames())
	})

	t.Run("SameNameOfAnotherKindIsFine", func(t *testing.T) {
		reg := harvest.NewRegistry()
		sameName := harvest.NewActivity("one", func(*harvest.ActivityContext, int) (int, error) { return 0, nil })
		require.NoError(t, reg.Register(one, sameName))
	})
}
