package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// Human gates in the console (docs/rules.md §6.7): the requests agents' gated commands wait at,
// decided here by a person through the same use case as chorus gate approve|refuse
// (app.DecideGate), and a project's gate policy on its settings page (app.SetGatePolicy).

// gatesShown bounds the gates page: the awaiting ones and the latest decided.
const gatesShown = 50

// gateLabels name the gateable commands for people.
var gateLabels = map[string]string{
	vocab.GateApproveProposal:    "Approving a proposal",
	vocab.GateVerifyTask:         "Verifying a task",
	vocab.GateResolveElaboration: "Resolving an idea's elaboration",
}

func (c *Console) gateRoutes(g *echo.Group) {
	g.GET("/gates", c.gatesPage)
	g.POST("/gates/:uuid/approve", c.decideGate(true))
	g.POST("/gates/:uuid/refuse", c.decideGate(false))
	g.POST("/projects/:uuid/settings/gates", c.setGatePolicy)
}

// gatesPage lists the gates of the projects the person can see: those awaiting a decision
// first, then the latest decided.
func (c *Console) gatesPage(ctx echo.Context) error {
	return c.showGates(ctx, http.StatusOK, page{}, "")
}

// showGates draws the gates page; p carries a refusal and failed the gate it concerns.
func (c *Console) showGates(ctx echo.Context, status int, p page, failed string) error {
	r := c.request(ctx)
	r.RequestID = "" // a read
	awaiting, err := c.app.ListGates(ctxOf(ctx), r, store.GateFilter{Status: vocab.GateAwaiting, Limit: gatesShown})
	if err != nil {
		return c.failure(ctx, err)
	}
	recent, err := c.app.ListGates(ctxOf(ctx), r, store.GateFilter{Limit: gatesShown})
	if err != nil {
		return c.failure(ctx, err)
	}
	var decided []app.Gate
	for _, g := range recent {
		if g.Status != vocab.GateAwaiting {
			decided = append(decided, g)
		}
	}
	p.Title, p.Nav = "Gates", "gates"
	p.Data = map[string]any{"Awaiting": awaiting, "Decided": decided, "Failed": failed, "Labels": gateLabels}
	return c.render(ctx, status, "gates", p)
}

// decideGate approves or refuses a gate (a note is required to refuse: the use case says so).
func (c *Console) decideGate(approve bool) echo.HandlerFunc {
	return func(ctx echo.Context) error {
		g, err := c.app.DecideGate(ctxOf(ctx), c.request(ctx), ctx.Param("uuid"), approve, ctx.FormValue("note"))
		if err != nil {
			if p, ok := refused(err, "note"); ok {
				return c.showGates(ctx, statusOf(app.Classify(err)), p, ctx.Param("uuid"))
			}
			return c.failure(ctx, err)
		}
		notice := "Approved: " + gateLabels[g.Command] + " “" + g.EntityTitle + "” is done in your name."
		switch g.Status {
		case vocab.GateRefused:
			notice = "Refused: " + g.RequestedByName + " is told, with your note."
			if approve { // approved, but the command no longer applied
				notice = "Not applied: " + deref(g.Note)
			}
		case vocab.GateExpired:
			notice = "This request had expired; nothing was applied."
		}
		return c.redirect(ctx, Path+"/gates", notice)
	}
}

// gatePolicyForm is a project's gate policy as its settings page shows it.
type gatePolicyForm struct {
	Policy   store.GatePolicy
	Commands []gateChoice
	Expire   string
}

type gateChoice struct {
	Name, Label string
	On          bool
}

// gatePolicyView reads the project's gate policy for its settings page.
func (c *Console) gatePolicyView(ctx echo.Context, projectUUID string) (gatePolicyForm, error) {
	r := c.request(ctx)
	r.RequestID = ""
	p, err := c.app.GatePolicy(ctxOf(ctx), r, projectUUID)
	if err != nil {
		return gatePolicyForm{}, err
	}
	v := gatePolicyForm{Policy: p, Expire: strconv.Itoa(p.ExpireAfterSeconds)}
	for _, name := range vocab.GateCommands {
		v.Commands = append(v.Commands, gateChoice{Name: name, Label: gateLabels[name], On: p.Gates(name)})
	}
	return v, nil
}

// setGatePolicy replaces the project's gate policy (manage_project; app.SetGatePolicy checks
// every field and names the one at fault).
func (c *Console) setGatePolicy(ctx echo.Context) error {
	form, err := ctx.FormParams()
	if err != nil {
		return c.failure(ctx, err)
	}
	raw := strings.TrimSpace(form.Get("expireAfterSeconds"))
	in := app.GatePolicyInput{Commands: form["commands"], SeparateDuties: form.Get("separateDuties") == "on"}
	if raw != "" {
		n, perr := strconv.Atoi(raw)
		if perr != nil {
			p := page{Error: "expireAfterSeconds: " + strconv.Quote(raw) + " is not a whole number of seconds; " +
				"write 0 for never, or 60 to 2592000.", Fields: map[string]string{}}
			p.Fields["expireAfterSeconds"] = p.Error
			return c.showSettings(ctx, http.StatusUnprocessableEntity, p, map[string]string{"expireAfterSeconds": raw}, nil)
		}
		in.ExpireAfterSeconds = n
	}
	_, err = c.app.SetGatePolicy(ctxOf(ctx), c.request(ctx), ctx.Param("uuid"), in)
	return c.settingsDone(ctx, err, "Human gates saved.", map[string]string{"expireAfterSeconds": raw},
		"commands", "expireAfterSeconds")
}
