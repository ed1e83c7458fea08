package eval

import (
	"reflect"
	"testing"
)

func TestTaskMeansAveragesEachTasksSamples(t *testing.T) {
	got := TaskMeans([]Outcome{{TaskID: "a", Reward: 1}, {TaskID: "b", Reward: 0}, {TaskID: "a", Reward: 0}, {TaskID: "b", Reward: 0.5}, {TaskID: "a", Reward: 0.5}})
	if want := map[string]float64{"a": 0.5, "b": 0.25}; !reflect.DeepEqual(got, want) {
		t.Errorf("TaskMeans = %v, want %v", got, want)
	}
}
