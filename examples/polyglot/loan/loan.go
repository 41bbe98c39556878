// Package loan is an example Harvest workflow whose activities are served
// by a service in another language (scoring_server.py, Python's standard
// library): a loan application is scored by a synchronous HTTP activity
// and reviewed by an asynchronous one that the service completes later
// with the attempt's task token.
package loan

import (
	"strings"
	"time"

	"github.com/harvestd/harvest"
)

// Names of the workflow and its activities.
const (
	WorkflowName = "loan_application"
	ScoreName    = "score_applicant"
	ReviewName   = "review_application"
)

// Application starts a loan_application run.
type Application struct {
	ApplicationID string `json:"application_id"`
	Applicant     string `json:"applicant"`
	AmountCents   int64  `json:"amount_cents"`
}

// Score is the answer of the scoring service's POST /score.
type Score struct {
	ScoreID   string `json:"score_id"`
	Applicant string `json:"applicant"`
	Score     int    `json:"score"`
}

// ReviewRequest is the input of the review: the application and its score.
type ReviewRequest struct {
	ApplicationID string `json:"application_id"`
	AmountCents   int64  `json:"amount_cents"`
	Score         int    `json:"score"`
}

// Review is the output the scoring service completes a review with.
type Review struct {
	ReviewID string `json:"review_id"`
	Decision string `json:"decision"` // approved or referred
	Reviewer string `json:"reviewer"`
}

// Result is how an application ended.
type Result struct {
	ApplicationID string `json:"application_id"`
	ScoreID       string `json:"score_id"`
	Score         int    `json:"score"`
	ReviewID      string `json:"review_id"`
	Decision      string `json:"decision"`
	Reviewer      string `json:"reviewer"`
}

// Loan is the workflow and its two HTTP activities, bound to the scoring
// service at one base URL.
type Loan struct {
	Score    *harvest.Activity[Application, Score]
	Review   *harvest.Activity[ReviewRequest, Review]
	Workflow *harvest.Workflow[Application, Result]
}

// New binds the definitions to the scoring service at baseURL (such as
// http://127.0.0.1:8090). The engine calls it: an address on loopback or
// a private network needs --callback-allow-cidr.
func New(baseURL string) *Loan {
	baseURL = strings.TrimRight(baseURL, "/")
	l := &Loan{}
	// Every attempt of an activity carries the same Idempotency-Key, so
	// the quick retries below cannot score an applicant twice.
	l.Score = harvest.NewHTTPActivity[Application, Score](ScoreName, baseURL+"/score", harvest.HTTPActivityOptions{
		Activity: harvest.ActivityOptions{StartToClose: 10 * time.Second, Retry: harvest.Exponential(5, 200*time.Millisecond)},
	})
	// Async: the service answers 202 and completes the attempt later with
	// its task token. StartToClose bounds the wait for that completion;
	// an attempt not completed in time is retried (a new token, the same
	// Idempotency-Key).
	l.Review = harvest.NewHTTPActivity[ReviewRequest, Review](ReviewName, baseURL+"/review", harvest.HTTPActivityOptions{
		Async:    true,
		Activity: harvest.ActivityOptions{StartToClose: time.Minute, Retry: harvest.Exponential(3, time.Second)},
	})
	l.Workflow = harvest.NewWorkflow(WorkflowName, l.run)
	return l
}

func (l *Loan) run(ctx harvest.Context, in Application) (Result, error) {
	score, err := l.Score.Execute(ctx, in).Get(ctx)
	if err != nil {
		return Result{}, err
	}
	review, err := l.Review.Execute(ctx, ReviewRequest{ApplicationID: in.ApplicationID, AmountCents: in.AmountCents, Score: score.Score}).Get(ctx)
	if err != nil {
		return Result{}, err
	}
	return Result{ApplicationID: in.ApplicationID, ScoreID: score.ScoreID, Score: score.Score,
		ReviewID: review.ReviewID, Decision: review.Decision, Reviewer: review.Reviewer}, nil
}

// Definitions lists the workflow and its activities.
func (l *Loan) Definitions() []harvest.Registrable {
	return []harvest.Registrable{l.Score, l.Review, l.Workflow}
}

// Registry is a registry of the definitions.
func (l *Loan) Registry() (*harvest.Registry, error) {
	reg := harvest.NewRegistry()
	return reg, reg.Register(l.Definitions()...)
}
